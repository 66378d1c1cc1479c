//! The `rtlat net` datagram: a fixed big-endian header, then padding up to
//! the requested size. A reply is the request with its kind and server
//! fields rewritten: never longer than the request.
//!
//! ```text
//! offset size field
//!      0    4 magic "RTLN"
//!      4    1 version (1)
//!      5    1 kind: 1 request, 2 reply
//!      6    2 flags (reply): bit 0 server RX latency valid, bit 1 it is a hardware timestamp
//!      8    4 length: the whole datagram in bytes (must equal the received length)
//!     12    4 session: chosen by the client per run
//!     16    8 sequence number (from 0)
//!     24    8 client send time (ns, CLOCK_REALTIME)
//!     32    8 server RX latency (ns): kernel RX timestamp → server user receive
//!     40    8 server turnaround (ns): server user receive → just before its reply is sent
//!     48  ... padding (zeroes)
//! ```

pub const MAGIC: [u8; 4] = *b"RTLN";
pub const VERSION: u8 = 1;
pub const HEADER: usize = 48;
/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;

pub const KIND_REQUEST: u8 = 1;
pub const KIND_REPLY: u8 = 2;

pub const FLAG_SERVER_RX: u16 = 1;
pub const FLAG_SERVER_RX_HARDWARE: u16 = 2;

/// The header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub kind: u8,
    pub flags: u16,
    pub length: u32,
    pub session: u32,
    pub seq: u64,
    pub client_send_ns: u64,
    pub server_rx_ns: u64,
    pub turnaround_ns: u64,
}

/// Why a datagram is not a valid `rtlat net` packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Shorter than the header.
    Short,
    /// Not our magic: someone else's traffic.
    Foreign,
    /// Our magic, another protocol version.
    Version,
    /// The length field differs from the received length.
    Length,
    /// An unknown kind, or flags a request cannot carry.
    Malformed,
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(w)
}

impl Header {
    /// Parse and check `b`, the whole received datagram.
    #[inline]
    pub fn parse(b: &[u8]) -> Result<Header, Bad> {
        if b.len() < HEADER {
            return Err(Bad::Short);
        }
        if b[0..4] != MAGIC {
            return Err(Bad::Foreign);
        }
        if b[4] != VERSION {
            return Err(Bad::Version);
        }
        let h = Header {
            kind: b[5],
            flags: u16::from_be_bytes([b[6], b[7]]),
            length: be32(b, 8),
            session: be32(b, 12),
            seq: be64(b, 16),
            client_send_ns: be64(b, 24),
            server_rx_ns: be64(b, 32),
            turnaround_ns: be64(b, 40),
        };
        if h.length as usize != b.len() {
            return Err(Bad::Length);
        }
        match h.kind {
            KIND_REQUEST if h.flags == 0 => Ok(h),
            KIND_REPLY => Ok(h),
            _ => Err(Bad::Malformed),
        }
    }

    /// Write the header into the first `HEADER` bytes of `b`.
    #[inline]
    pub fn write(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = self.kind;
        b[6..8].copy_from_slice(&self.flags.to_be_bytes());
        b[8..12].copy_from_slice(&self.length.to_be_bytes());
        b[12..16].copy_from_slice(&self.session.to_be_bytes());
        b[16..24].copy_from_slice(&self.seq.to_be_bytes());
        b[24..32].copy_from_slice(&self.client_send_ns.to_be_bytes());
        b[32..40].copy_from_slice(&self.server_rx_ns.to_be_bytes());
        b[40..48].copy_from_slice(&self.turnaround_ns.to_be_bytes());
    }
}

/// Set the sequence number and send time of a request already in `b`.
#[inline(always)]
pub fn stamp_request(b: &mut [u8], seq: u64, send_ns: u64) {
    b[16..24].copy_from_slice(&seq.to_be_bytes());
    b[24..32].copy_from_slice(&send_ns.to_be_bytes());
}

/// Turn the request in `b` into its reply, in place (same length).
#[inline(always)]
pub fn make_reply(b: &mut [u8], flags: u16, server_rx_ns: u64) {
    b[5] = KIND_REPLY;
    b[6..8].copy_from_slice(&flags.to_be_bytes());
    b[32..40].copy_from_slice(&server_rx_ns.to_be_bytes());
}

/// Set the turnaround of a reply in `b`: the last write before it is sent.
#[inline(always)]
pub fn set_turnaround(b: &mut [u8], ns: u64) {
    b[40..48].copy_from_slice(&ns.to_be_bytes());
}

/// A request of `size` bytes (header + zero padding).
pub fn request(size: usize, session: u32) -> Vec<u8> {
    let mut b = vec![0u8; size.max(HEADER)];
    Header {
        kind: KIND_REQUEST,
        length: b.len() as u32,
        session,
        ..Default::default()
    }
    .write(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_big_endian_at_documented_offsets() {
        let mut b = request(64, 0x0102_0304);
        stamp_request(&mut b, 0x1122_3344_5566_7788, 42);
        assert_eq!(&b[0..8], b"RTLN\x01\x01\x00\x00");
        assert_eq!(&b[8..12], &[0, 0, 0, 64]);
        assert_eq!(&b[12..16], &[1, 2, 3, 4]);
        assert_eq!(
            &b[16..24],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(&b[24..32], &[0, 0, 0, 0, 0, 0, 0, 42]);
        assert!(b[32..].iter().all(|&x| x == 0));
        let h = Header::parse(&b).unwrap();
        assert_eq!(
            (h.kind, h.seq, h.client_send_ns),
            (KIND_REQUEST, 0x1122_3344_5566_7788, 42)
        );
        make_reply(&mut b, FLAG_SERVER_RX, 1234);
        set_turnaround(&mut b, 99);
        let r = Header::parse(&b).unwrap();
        assert_eq!(
            (r.kind, r.flags, r.server_rx_ns, r.turnaround_ns, r.length),
            (KIND_REPLY, FLAG_SERVER_RX, 1234, 99, 64)
        );
        assert_eq!((r.session, r.seq, r.client_send_ns), (h.session, h.seq, 42));
    }

    #[test]
    fn bad_datagrams_are_classified() {
        let good = request(64, 7);
        assert_eq!(Header::parse(&good[..HEADER - 1]), Err(Bad::Short));
        assert_eq!(Header::parse(&[]), Err(Bad::Short));
        // A truncated datagram keeps a length field that no longer matches.
        assert_eq!(Header::parse(&good[..HEADER]), Err(Bad::Length));
        let mut b = good.clone();
        b[0] = b'X';
        assert_eq!(Header::parse(&b), Err(Bad::Foreign));
        let mut b = good.clone();
        b[4] = 9;
        assert_eq!(Header::parse(&b), Err(Bad::Version));
        for absurd in [0u32, 1, 47, 65, 0xFFFF_FFFF] {
            let mut b = good.clone();
            b[8..12].copy_from_slice(&absurd.to_be_bytes());
            assert_eq!(Header::parse(&b), Err(Bad::Length), "{absurd}");
        }
        let mut b = good.clone();
        b[5] = 3;
        assert_eq!(Header::parse(&b), Err(Bad::Malformed));
        let mut b = good;
        b[7] = 1;
        assert_eq!(
            Header::parse(&b),
            Err(Bad::Malformed),
            "a request with flags"
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut buf = [0u8; 200];
        for i in 0..20_000usize {
            for byte in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            if i % 3 == 0 {
                buf[..5].copy_from_slice(b"RTLN\x01");
            }
            let len = (x as usize) % buf.len();
            let _ = Header::parse(&buf[..len]);
        }
    }
}
