//! UDP sockets with kernel timestamps (SO_TIMESTAMPING), for `rtlat net`.
//!
//! Software timestamps are taken by the kernel on CLOCK_REALTIME: on receive
//! when the packet enters the stack (`netif_receive_skb`), on send in the
//! driver just before the packet is handed to the device (`skb_tx_timestamp`).
//! Hardware timestamps (where the NIC makes them) are on the NIC's clock.
//! TX timestamps come back on the socket's error queue (`MSG_ERRQUEUE`) with a
//! `sock_extended_err` whose `ee_data` is the packet's OPT_ID key: the count
//! of datagrams sent on the socket before it, from 0.
//!
//! Nothing here allocates after the socket is created: the control-message
//! buffer lives in the socket.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, OwnedFd};

use super::clock::SecNs;

/// Which timestamps a socket asks the kernel for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamping {
    /// Kernel software timestamps (CLOCK_REALTIME).
    Software,
    /// NIC hardware timestamps (the NIC's clock; needs hardware timestamping
    /// enabled on the interface, e.g. `hwstamp_ctl -i IF -t 1 -r 1`).
    Hardware,
}

impl Stamping {
    /// The SO_TIMESTAMPING flags: receive timestamps, plus send timestamps
    /// (with OPT_ID keys and without the packet looped back) when `tx`.
    pub fn flags(self, tx: bool) -> u32 {
        let (gen_rx, gen_tx, report) = match self {
            Stamping::Software => (
                libc::SOF_TIMESTAMPING_RX_SOFTWARE,
                libc::SOF_TIMESTAMPING_TX_SOFTWARE,
                libc::SOF_TIMESTAMPING_SOFTWARE,
            ),
            Stamping::Hardware => (
                libc::SOF_TIMESTAMPING_RX_HARDWARE,
                libc::SOF_TIMESTAMPING_TX_HARDWARE,
                libc::SOF_TIMESTAMPING_RAW_HARDWARE,
            ),
        };
        let mut f = gen_rx | report;
        if tx {
            f |= gen_tx | libc::SOF_TIMESTAMPING_OPT_ID | libc::SOF_TIMESTAMPING_OPT_TSONLY;
        }
        f
    }
}

/// A socket address in the kernel's form, ready for `sendto` without conversion.
#[derive(Clone, Copy)]
pub struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_socket_addr() {
            Some(a) => write!(f, "{a}"),
            None => write!(f, "<family {}>", self.storage.ss_family),
        }
    }
}

impl RawAddr {
    fn empty() -> RawAddr {
        RawAddr {
            // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (AF_UNSPEC) value.
            storage: unsafe { zeroed() },
            len: 0,
        }
    }

    pub fn new(a: &SocketAddr) -> RawAddr {
        let mut r = RawAddr::empty();
        match a {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(v4.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
                unsafe { std::ptr::write(&mut r.storage as *mut _ as *mut libc::sockaddr_in, sin) };
                r.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: v6.ip().octets(),
                    },
                    sin6_scope_id: v6.scope_id(),
                };
                // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
                unsafe {
                    std::ptr::write(&mut r.storage as *mut _ as *mut libc::sockaddr_in6, sin6)
                };
                r.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        r
    }

    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.storage.ss_family as libc::c_int {
            libc::AF_INET if self.len as usize >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in, and it is long enough.
                let sin = unsafe {
                    std::ptr::read(&self.storage as *const _ as *const libc::sockaddr_in)
                };
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if self.len as usize >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: the family says the storage holds a sockaddr_in6, and it is long enough.
                let sin6 = unsafe {
                    std::ptr::read(&self.storage as *const _ as *const libc::sockaddr_in6)
                };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

/// What `recvmsg` said about one datagram.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes placed in the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (MSG_TRUNC): the rest was dropped.
    pub truncated: bool,
    /// Kernel software RX timestamp, ns of CLOCK_REALTIME (0: none).
    pub software_ns: u64,
    /// NIC hardware RX timestamp, ns of the NIC clock (0: none).
    pub hardware_ns: u64,
    /// The sender.
    pub from: RawAddr,
}

/// One message from the error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrQueue {
    /// Nothing queued.
    Empty,
    /// A send timestamp: the OPT_ID `key` of the datagram and its timestamps (0: none).
    Sent {
        key: u32,
        software_ns: u64,
        hardware_ns: u64,
    },
    /// Something else (another timestamp type, an error report): read and dropped.
    Other,
}

/// What `ppoll` reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    /// The error queue holds a message or a socket error is pending.
    pub error: bool,
}

/// Control-message space: three timespecs plus a sock_extended_err with an
/// address, with room to spare; u64 elements keep it aligned for cmsghdr.
const CONTROL_WORDS: usize = 64;

/// A UDP socket (IPv4 or IPv6) with timestamping.
pub struct TsSocket {
    fd: OwnedFd,
    control: [u64; CONTROL_WORDS],
    scratch: [u8; 64],
    /// Connected to one peer: [`TsSocket::recv`] leaves the sender's address
    /// out (one copy to user space less per datagram).
    connected: bool,
}

fn cvt(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(super::last_error())
    } else {
        Ok(())
    }
}

impl TsSocket {
    /// A UDP socket of `addr`'s family bound to `addr` (port 0: any free port).
    pub fn bind(addr: &SocketAddr) -> io::Result<TsSocket> {
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let family = match addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let fd = rustix::net::socket_with(family, SocketType::DGRAM, SocketFlags::CLOEXEC, None)?;
        let raw = RawAddr::new(addr);
        // SAFETY: `raw.storage` holds a valid sockaddr of length `raw.len`.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &raw.storage as *const _ as *const libc::sockaddr,
                raw.len,
            )
        })?;
        Ok(TsSocket {
            fd,
            control: [0; CONTROL_WORDS],
            scratch: [0; 64],
            connected: false,
        })
    }

    /// A second handle on the same socket (its own control buffer), so one
    /// thread can send while another receives.
    pub fn try_clone(&self) -> io::Result<TsSocket> {
        Ok(TsSocket {
            fd: rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?,
            control: [0; CONTROL_WORDS],
            scratch: [0; 64],
            connected: self.connected,
        })
    }

    /// Fix the peer: `send` goes there, and only its datagrams are received.
    pub fn connect(&mut self, addr: &SocketAddr) -> io::Result<()> {
        let raw = RawAddr::new(addr);
        // SAFETY: `raw.storage` holds a valid sockaddr of length `raw.len`.
        cvt(unsafe {
            libc::connect(
                self.fd.as_raw_fd(),
                &raw.storage as *const _ as *const libc::sockaddr,
                raw.len,
            )
        })?;
        self.connected = true;
        Ok(())
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let mut raw = RawAddr::empty();
        raw.len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: the storage is writable for `raw.len` bytes; the kernel updates the length.
        cvt(unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                &mut raw.storage as *mut _ as *mut libc::sockaddr,
                &mut raw.len,
            )
        })?;
        raw.to_socket_addr()
            .ok_or_else(|| io::Error::other("getsockname: not an IP socket"))
    }

    fn set_opt<T>(&self, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
        // SAFETY: `value` points to a live T of the size given.
        cvt(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                value as *const T as *const libc::c_void,
                size_of::<T>() as libc::socklen_t,
            )
        })
    }

    /// Ask for timestamps (`Stamping::flags`). With OPT_ID, the key counter starts at 0 here.
    pub fn enable_timestamps(&self, flags: u32) -> io::Result<()> {
        let v = flags as libc::c_uint;
        self.set_opt(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &v)
    }

    /// Blocking receives return `WouldBlock` after `ns` without a datagram.
    pub fn set_recv_timeout(&self, ns: u64) -> io::Result<()> {
        let mut tv = libc::timeval::from_ns(ns);
        tv.tv_usec = tv.tv_usec.max(1);
        self.set_opt(libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
    }

    /// Busy-poll the device queue for up to `us` µs in a blocking receive
    /// (SO_BUSY_POLL; above `net.core.busy_read` it needs CAP_NET_ADMIN).
    pub fn set_busy_poll(&self, us: u32) -> io::Result<()> {
        let v = us.min(i32::MAX as u32) as libc::c_int;
        self.set_opt(libc::SOL_SOCKET, libc::SO_BUSY_POLL, &v)
    }

    /// Socket buffer sizes (the kernel doubles and caps them; best effort).
    pub fn set_buffers(&self, bytes: usize) {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        let _ = self.set_opt(libc::SOL_SOCKET, libc::SO_RCVBUF, &v);
        let _ = self.set_opt(libc::SOL_SOCKET, libc::SO_SNDBUF, &v);
    }

    /// Send to the connected peer.
    #[inline]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for reads of its length.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                0,
            )
        };
        if n < 0 {
            Err(super::last_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Send to `to`.
    #[inline]
    pub fn send_to(&self, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
        // SAFETY: `buf` is valid for reads of its length; `to` holds a sockaddr of length `to.len`.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                0,
                &to.storage as *const _ as *const libc::sockaddr,
                to.len,
            )
        };
        if n < 0 {
            Err(super::last_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Receive one datagram into `buf` with its RX timestamps and sender
    /// (left empty on a connected socket, which takes only its peer's).
    /// `wait`: block (up to the receive timeout) rather than return `WouldBlock`.
    #[inline]
    pub fn recv(&mut self, buf: &mut [u8], wait: bool) -> io::Result<Received> {
        let mut from = RawAddr::empty();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        if !self.connected {
            msg.msg_name = &mut from.storage as *mut _ as *mut libc::c_void;
            msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; CONTROL_WORDS]>() as _;
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        // SAFETY: every pointer in `msg` refers to live, writable memory of the stated length.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, flags) };
        if n < 0 {
            return Err(super::last_error());
        }
        from.len = msg.msg_namelen;
        let (software_ns, hardware_ns) = stamps(&msg);
        Ok(Received {
            len: n as usize,
            truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
            software_ns,
            hardware_ns,
            from,
        })
    }

    /// Read one message from the error queue without waiting.
    pub fn recv_errqueue(&mut self) -> io::Result<ErrQueue> {
        let mut iov = libc::iovec {
            iov_base: self.scratch.as_mut_ptr() as *mut libc::c_void,
            iov_len: self.scratch.len(),
        };
        // SAFETY: msghdr is plain old data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; CONTROL_WORDS]>() as _;
        // SAFETY: every pointer in `msg` refers to live, writable memory of the stated length.
        let n = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = super::last_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(ErrQueue::Empty),
                _ => Err(e),
            };
        }
        let (software_ns, hardware_ns) = stamps(&msg);
        let mut key = None;
        // SAFETY: `msg` was filled by recvmsg; the CMSG macros stay within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !c.is_null() {
            // SAFETY: `c` is a valid cmsghdr inside the control buffer (CMSG_FIRSTHDR/NXTHDR).
            let h = unsafe { std::ptr::read_unaligned(c) };
            let is_err = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
            // SAFETY: CMSG_LEN only computes a length.
            let need = unsafe { libc::CMSG_LEN(size_of::<libc::sock_extended_err>() as _) };
            if is_err && h.cmsg_len as usize >= need as usize {
                // SAFETY: the message is long enough to hold a sock_extended_err at CMSG_DATA.
                let ee = unsafe {
                    std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::sock_extended_err)
                };
                if ee.ee_errno == libc::ENOMSG as u32
                    && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                    && ee.ee_info == SCM_TSTAMP_SND
                {
                    key = Some(ee.ee_data);
                }
            }
            // SAFETY: `c` is within the buffer described by `msg`.
            c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
        }
        Ok(match key {
            Some(key) if software_ns != 0 || hardware_ns != 0 => ErrQueue::Sent {
                key,
                software_ns,
                hardware_ns,
            },
            _ => ErrQueue::Other,
        })
    }

    /// Wait up to `timeout_ns` for a datagram or an error-queue message.
    #[inline]
    pub fn poll(&self, timeout_ns: u64) -> io::Result<Ready> {
        let revents = super::poll_readable(self.fd.as_raw_fd(), timeout_ns)?;
        Ok(Ready {
            readable: revents & libc::POLLIN != 0,
            error: revents & libc::POLLERR != 0,
        })
    }

    /// Read and clear the pending socket error (e.g. ECONNREFUSED after an ICMP port unreachable).
    pub fn take_error(&self) -> Option<io::Error> {
        match rustix::net::sockopt::socket_error(&self.fd) {
            Ok(Err(e)) => Some(e.into()),
            _ => None,
        }
    }
}

/// `SCM_TSTAMP_SND`: the timestamp was taken when the packet went to the device.
const SCM_TSTAMP_SND: u32 = 0;

/// The (software, hardware) timestamps of an SCM_TIMESTAMPING message in `msg` (0: none).
fn stamps(msg: &libc::msghdr) -> (u64, u64) {
    let (mut sw, mut hw) = (0, 0);
    // SAFETY: `msg` was filled by recvmsg; the CMSG macros stay within msg_controllen.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !c.is_null() {
        // SAFETY: `c` is a valid cmsghdr inside the control buffer.
        let h = unsafe { std::ptr::read_unaligned(c) };
        // SAFETY: CMSG_LEN only computes a length.
        let need = unsafe { libc::CMSG_LEN(size_of::<[libc::timespec; 3]>() as _) };
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPING
            && h.cmsg_len as usize >= need as usize
        {
            // SAFETY: the message holds a struct scm_timestamping (three timespecs) at CMSG_DATA.
            let ts = unsafe {
                std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const [libc::timespec; 3])
            };
            sw = ts[0].to_ns();
            hw = ts[2].to_ns();
        }
        // SAFETY: `c` is within the buffer described by `msg`.
        c = unsafe { libc::CMSG_NXTHDR(msg, c) };
    }
    (sw, hw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_addresses_round_trip() {
        for s in ["127.0.0.1:7357", "[::1]:9", "[fd00::1]:65535", "10.1.2.3:0"] {
            let a: SocketAddr = s.parse().unwrap();
            assert_eq!(RawAddr::new(&a).to_socket_addr(), Some(a));
        }
    }

    #[test]
    fn loopback_datagram_carries_rx_and_tx_software_timestamps() {
        if std::env::var_os("RTLAT_TEST_EMULATOR").is_some() {
            eprintln!("skipped under qemu-user: it does not implement SO_TIMESTAMPING");
            return;
        }
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut rx = TsSocket::bind(&lo).unwrap();
        rx.enable_timestamps(Stamping::Software.flags(false))
            .unwrap();
        let mut tx = TsSocket::bind(&lo).unwrap();
        tx.enable_timestamps(Stamping::Software.flags(true))
            .unwrap();
        tx.connect(&rx.local_addr().unwrap()).unwrap();
        // The kernel turns RX timestamping on from a work queue: give it a moment.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = crate::sys::clock::now_ns(libc::CLOCK_REALTIME);
        for _ in 0..3 {
            assert_eq!(tx.send(b"hello").unwrap(), 5);
        }
        rx.set_recv_timeout(1_000_000_000).unwrap();
        let mut buf = [0u8; 16];
        let got = rx.recv(&mut buf, true).unwrap();
        assert_eq!(&buf[..got.len], b"hello");
        assert!(!got.truncated);
        assert!(got.software_ns >= before, "no RX timestamp: {got:?}");
        assert_eq!(got.from.to_socket_addr(), tx.local_addr().ok());
        // Three sends, keys 0, 1, 2, each stamped after the user time before them.
        let mut keys = Vec::new();
        for _ in 0..100 {
            match tx.recv_errqueue().unwrap() {
                ErrQueue::Sent {
                    key, software_ns, ..
                } => {
                    assert!(software_ns >= before);
                    keys.push(key);
                }
                ErrQueue::Empty if keys.len() == 3 => break,
                _ => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        assert_eq!(keys, vec![0, 1, 2]);
        // A short buffer reports the truncation.
        let mut small = [0u8; 2];
        let got = rx.recv(&mut small, true).unwrap();
        assert!(got.truncated && got.len == 2);
    }
}
