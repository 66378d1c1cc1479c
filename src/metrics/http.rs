//! The smallest HTTP/1.1 server `GET /metrics` needs, hardened against
//! hostile clients: one thread, one poll loop, at most [`MAX_CONNS`]
//! connections of at most [`MAX_HEADER`] bytes of request each, every
//! connection closed after one response or at its deadline. Nothing a client
//! sends grows memory or threads beyond those bounds.
//!
//! Idle connections cannot starve a scrape (slowloris): a new connection
//! is read at once, and when every slot is taken the oldest connection that
//! has not sent its request yet is dropped to make room (a connection past
//! that point is being answered and soon gone; when all are, the newcomer
//! gets 503). The server shares with the reporter only the latest snapshot,
//! taken under a lock held for an `Arc` clone: it never delays the reporter,
//! and the measuring threads never see it.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A request header longer than this ends its connection.
pub const MAX_HEADER: usize = 8 * 1024;
/// Connections served at once; beyond, the oldest idle one makes room.
pub const MAX_CONNS: usize = 16;
/// Time a client has to send its request, then to read the response.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// How often the loop looks at the stop flag.
const TICK: Duration = Duration::from_millis(100);
/// Connections accepted per loop turn, so a flood cannot starve the others.
const ACCEPTS_PER_TURN: usize = 64;

/// What the server answers: the body for `GET /metrics`, in OpenMetrics
/// when `open` (the client asked for it), else Prometheus' text format.
pub trait MetricsSource {
    fn metrics(&self, open: bool) -> String;
}

/// OpenMetrics' media type, as a client's `Accept` names it.
const OPEN_METRICS: &str = "application/openmetrics-text";

/// Whether the request's `Accept` header asks for OpenMetrics (a client
/// that takes both lists it; a quality of 0 refuses it). Only the build
/// with the kernel's trace serves it: its exemplars name culprits, which
/// only the trace knows.
fn wants_open_metrics(request: &[u8]) -> bool {
    if !crate::KERNEL_TRACE {
        return false;
    }
    let text = String::from_utf8_lossy(request);
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
        .flat_map(|(_, v)| v.split(','))
        .any(|range| {
            let mut params = range.split(';').map(str::trim);
            // A quality is 0 to 1 with at most three decimals: all zeros
            // (`0`, `0.0`, `0.000`) refuse.
            params.next() == Some(OPEN_METRICS)
                && params
                    .filter_map(|p| p.strip_prefix("q="))
                    .all(|q| q.chars().any(|c| c != '0' && c != '.'))
        })
}

struct Conn {
    stream: TcpStream,
    request: Vec<u8>,
    filled: usize,
    response: Vec<u8>,
    written: usize,
    deadline: Instant,
}

enum Step {
    Keep,
    Close,
}

impl Conn {
    fn new(stream: TcpStream) -> Option<Conn> {
        stream.set_nonblocking(true).ok()?;
        Some(Conn {
            stream,
            request: vec![0; MAX_HEADER],
            filled: 0,
            response: Vec::new(),
            written: 0,
            deadline: Instant::now() + TIMEOUT,
        })
    }

    fn responding(&self) -> bool {
        !self.response.is_empty()
    }

    fn read(&mut self, app: &dyn MetricsSource) -> Step {
        loop {
            match self.stream.read(&mut self.request[self.filled..]) {
                Ok(0) => return Step::Close,
                Ok(n) => {
                    let from = self.filled.saturating_sub(3);
                    self.filled += n;
                    if header_end(&self.request[from..self.filled]).is_some() {
                        self.response = respond(&self.request[..self.filled], app);
                        self.request = Vec::new();
                        self.deadline = Instant::now() + TIMEOUT;
                        return self.write();
                    }
                    if self.filled == MAX_HEADER {
                        return Step::Close;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Keep,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
    }

    fn write(&mut self) -> Step {
        while self.written < self.response.len() {
            match self.stream.write(&self.response[self.written..]) {
                Ok(0) => return Step::Close,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Keep,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
        let _ = self.stream.shutdown(Shutdown::Write);
        Step::Close
    }
}

/// Where the blank line ending the header is, if it has come.
fn header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| buf.windows(2).position(|w| w == b"\n\n"))
}

/// The whole response to one request: 200 with the metrics for
/// `GET /metrics` (a query string is ignored), 404 for anything else.
fn respond(request: &[u8], app: &dyn MetricsSource) -> Vec<u8> {
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, kind, body) = if method == b"GET" && path == b"/metrics" {
        if wants_open_metrics(request) {
            (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                app.metrics(true),
            )
        } else {
            (
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                app.metrics(false),
            )
        }
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: rtlat serves GET /metrics only\n".to_string(),
        )
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Serve `listener` (non-blocking) until `stop` is set.
pub fn serve(listener: &TcpListener, app: &dyn MetricsSource, stop: &AtomicBool) {
    let mut conns: Vec<Conn> = Vec::with_capacity(MAX_CONNS);
    let mut ready = [PollFlags::empty(); MAX_CONNS + 1];
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: TICK.as_nanos() as _,
    };
    while !stop.load(Ordering::Relaxed) {
        {
            let mut fds = Vec::with_capacity(MAX_CONNS + 1);
            fds.push(PollFd::new(listener, PollFlags::IN));
            for c in &conns {
                let want = if c.responding() {
                    PollFlags::OUT
                } else {
                    PollFlags::IN
                };
                fds.push(PollFd::new(&c.stream, want));
            }
            match poll(&mut fds, Some(&tick)) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    std::thread::sleep(TICK);
                    continue;
                }
            }
            for (r, fd) in ready.iter_mut().zip(&fds) {
                *r = fd.revents();
            }
        }
        // Serve the connections first (their slots may free), then accept;
        // a connection past its deadline is closed whatever it sends.
        let now = Instant::now();
        let mut k = 0;
        conns.retain_mut(|c| {
            k += 1;
            let r = ready[k];
            let step = if now >= c.deadline || r.intersects(PollFlags::ERR | PollFlags::NVAL) {
                Step::Close
            } else if c.responding() && r.intersects(PollFlags::OUT | PollFlags::HUP) {
                c.write()
            } else if !c.responding() && r.intersects(PollFlags::IN | PollFlags::HUP) {
                c.read(app)
            } else {
                Step::Keep
            };
            matches!(step, Step::Keep)
        });
        if ready[0].contains(PollFlags::IN) {
            for _ in 0..ACCEPTS_PER_TURN {
                match listener.accept() {
                    Ok((stream, _)) => admit(&mut conns, stream, app),
                    Err(_) => break,
                }
            }
        }
    }
}

/// Take in a new connection: read it at once (a scrape's request is often
/// there already, and then it is answered before anything can drop it);
/// if it stays, make room by dropping the oldest idle connection, or answer
/// 503 when every slot is busy answering.
fn admit(conns: &mut Vec<Conn>, stream: TcpStream, app: &dyn MetricsSource) {
    let Some(mut c) = Conn::new(stream) else {
        return;
    };
    if let Step::Close = c.read(app) {
        return;
    }
    if conns.len() >= MAX_CONNS {
        // In accept order: the first one still reading its request is the oldest idle.
        match conns.iter().position(|o| !o.responding()) {
            Some(oldest) => drop(conns.remove(oldest)),
            None => {
                if !c.responding() {
                    let _ = (&c.stream).write(BUSY);
                }
                return;
            }
        }
    }
    conns.push(c);
}

/// The answer when every slot is busy answering others.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl MetricsSource for Fixed {
        fn metrics(&self, open: bool) -> String {
            if open {
                "m 1\n# EOF\n".into()
            } else {
                "m 1\n".into()
            }
        }
    }

    #[test]
    fn open_metrics_is_served_to_who_asks_for_it() {
        // Served by the build with the kernel's trace only.
        let om = crate::KERNEL_TRACE;
        let asked = |accept: &str| {
            let req = format!("GET /metrics HTTP/1.1\r\nHost: a\r\nAccept: {accept}\r\n\r\n");
            let r = String::from_utf8(respond(req.as_bytes(), &Fixed)).unwrap();
            (
                r.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
                r.ends_with("# EOF\n"),
            )
        };
        // Prometheus' own scrape header.
        assert_eq!(
            asked("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            (om, om)
        );
        assert_eq!(asked("text/plain;version=0.0.4"), (false, false));
        assert_eq!(asked("application/openmetrics-text;q=0"), (false, false));
        assert_eq!(
            asked("application/openmetrics-text; q=0.000"),
            (false, false)
        );
        assert_eq!(asked("application/openmetrics-text;q=0.001"), (om, om));
        assert_eq!(asked("*/*"), (false, false));
    }

    #[test]
    fn only_get_metrics_is_served() {
        let ok = String::from_utf8(respond(
            b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
            &Fixed,
        ))
        .unwrap();
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nm 1\n"), "{ok}");
        assert!(ok.contains("Content-Length: 4\r\n"));
        for bad in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"POST /metrics HTTP/1.1\r\n\r\n",
            b"\x00\xff\r\n\r\n",
            b"",
        ] {
            let r = String::from_utf8(respond(bad, &Fixed)).unwrap();
            assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
        }
    }

    #[test]
    fn idle_connections_make_room_for_a_scrape() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let idle: Vec<TcpStream> = (0..MAX_CONNS * 4)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let mut conns = Vec::new();
        for _ in 0..idle.len() {
            let (s, _) = listener.accept().unwrap();
            admit(&mut conns, s, &Fixed);
        }
        assert_eq!(conns.len(), MAX_CONNS);
        let mut scrape = TcpStream::connect(addr).unwrap();
        scrape.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let (s, _) = listener.accept().unwrap();
        admit(&mut conns, s, &Fixed);
        let mut answer = String::new();
        scrape.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(conns.len() <= MAX_CONNS);
    }

    #[test]
    fn header_end_is_found_across_line_ending_styles() {
        assert_eq!(header_end(b"GET / HTTP/1.0\r\n\r\n"), Some(14));
        assert_eq!(header_end(b"GET / HTTP/1.0\n\n"), Some(14));
        assert_eq!(header_end(b"GET / HTTP/1.0\r\nHost: x\r\n"), None);
    }
}
