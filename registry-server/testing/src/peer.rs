//! A scripted HTTP/1.1 peer on loopback, for what a real server never does: a
//! length it never sends, an answer that never ends, a redirect elsewhere, an
//! answer forged on its way (a proxy in front of a real server). The peer reads
//! each request (its head, and the body its `Content-Length` announces), keeps
//! it, and lets the test's script write the answer as it likes, byte by byte if
//! it must. One parser of requests for every such test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::{Result, io};

/// A request as the peer read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The request line and the header lines, each with its `\r\n`, without the
    /// blank line that ends them.
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    /// The request line: `GET /index/config.json HTTP/1.1`.
    pub fn line(&self) -> &str {
        self.lines().next().unwrap_or_default()
    }

    /// The header lines (`Name: value`), as sent.
    pub fn headers(&self) -> impl Iterator<Item = &str> {
        self.lines().skip(1)
    }

    /// The value of the first header called `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers().find_map(|h| {
            let (n, v) = h.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn lines(&self) -> impl Iterator<Item = &str> {
        self.head.split_terminator("\r\n")
    }
}

/// The peer: answers on its own threads (one per connection) until dropped.
pub struct HttpPeer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stopped: Arc<AtomicBool>,
}

type Script<S> = dyn Fn(&Request, &mut S) + Send + Sync;

impl HttpPeer {
    /// Listens on a fresh loopback port; `script` answers each request on its
    /// connection (write the status line, headers and body; an error writing is
    /// the client gone). The connection's next request is read after it, until
    /// the client closes the connection: an answer saying `Connection: close`
    /// ends it, one that does not is kept alive.
    pub fn start(script: impl Fn(&Request, &mut TcpStream) + Send + Sync + 'static) -> Result<HttpPeer> {
        HttpPeer::start_over(Some, script)
    }

    /// [`HttpPeer::start`] over what `wrap` makes of each connection accepted
    /// (a TLS server connection, say); a connection it refuses (`None`) is closed.
    /// A request that cannot be read (a TLS handshake the client refused) ends
    /// the connection before the script.
    pub fn start_over<S: Read + Write + Send + 'static>(
        wrap: impl Fn(TcpStream) -> Option<S> + Send + 'static,
        script: impl Fn(&Request, &mut S) + Send + Sync + 'static,
    ) -> Result<HttpPeer> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding a loopback port for an HTTP peer"))?;
        let addr = listener.local_addr().map_err(io("the HTTP peer's address"))?;
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stopped: Arc<AtomicBool> = Arc::default();
        let (kept, stop) = (requests.clone(), stopped.clone());
        let script: Arc<Script<S>> = Arc::new(script);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Some(stream) = stream.ok().and_then(&wrap) else { continue };
                let (kept, script) = (kept.clone(), script.clone());
                std::thread::spawn(move || serve(stream, &kept, &*script));
            }
        });
        Ok(HttpPeer { addr, requests, stopped })
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request read so far, in the order they were read.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        // The accepting thread sees the flag at its next connection: this one.
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve<S: Read + Write>(mut stream: S, kept: &Mutex<Vec<Request>>, script: &Script<S>) {
    let mut buffered = Vec::new();
    while let Ok(Some(request)) = read_request(&mut stream, &mut buffered) {
        kept.lock().unwrap_or_else(PoisonError::into_inner).push(request.clone());
        script(&request, &mut stream);
        let _ = stream.flush();
    }
}

/// Most bytes of a request's head, and of its body: a client sending more is not
/// one of ours.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 256 * 1024 * 1024;

/// The next request of the connection (`buffered`: what was read past the last
/// one); `None` once the client closed it.
fn read_request(stream: &mut impl Read, buffered: &mut Vec<u8>) -> std::io::Result<Option<Request>> {
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = buffered.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffered.len() > MAX_HEAD {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a request head of more than 64 KiB"));
        }
        match stream.read(&mut chunk)? {
            0 => return Ok(None),
            n => buffered.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffered[..end + 2]).into_owned();
    buffered.drain(..end + 4);
    let mut request = Request { head, body: Vec::new() };
    let length: usize = request.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    if length > MAX_BODY {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a request body of more than 256 MiB"));
    }
    let from_buffer = length.min(buffered.len());
    request.body = buffered.drain(..from_buffer).collect();
    let mut rest = vec![0; length - from_buffer];
    stream.read_exact(&mut rest)?;
    request.body.extend_from_slice(&rest);
    Ok(Some(request))
}

/// Writes a whole answer: `HTTP/1.1 {status}`, `headers`, the body's
/// `Content-Length`, then `body`.
pub fn respond(stream: &mut impl Write, status: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A request written in pieces, its body split across reads, then a second
    /// one on the same connection (kept alive), then the client gone.
    #[test]
    fn requests_are_read_whole_and_kept_in_order() {
        let peer = HttpPeer::start(|request, stream| {
            let body = format!("{} {}", request.line(), request.body.len());
            respond(stream, "200 OK", &[("X-Seen", "yes")], body.as_bytes()).unwrap();
        })
        .unwrap();
        let mut client = TcpStream::connect(peer.addr()).unwrap();
        client.write_all(b"PUT /a HTTP/1.1\r\nHost: x\r\ncontent-LENGTH: 5").unwrap();
        client.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        client.write_all(b"\r\n\r\nhel").unwrap();
        client.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        client.write_all(b"loGET /b HTTP/1.1\r\n\r\n").unwrap();
        let mut answers = Vec::new();
        let expected = "HTTP/1.1 200 OK\r\nX-Seen: yes\r\nContent-Length: 17\r\n\r\nPUT /a HTTP/1.1 5\
                        HTTP/1.1 200 OK\r\nX-Seen: yes\r\nContent-Length: 17\r\n\r\nGET /b HTTP/1.1 0";
        while answers.len() < expected.len() {
            let mut chunk = [0u8; 256];
            let n = client.read(&mut chunk).unwrap();
            assert_ne!(n, 0, "{}", String::from_utf8_lossy(&answers));
            answers.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(String::from_utf8_lossy(&answers), expected);
        let requests = peer.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!((requests[0].line(), requests[0].body.as_slice()), ("PUT /a HTTP/1.1", b"hello".as_slice()));
        assert_eq!(requests[0].header("Content-Length"), Some("5"));
        assert_eq!(requests[0].headers().collect::<Vec<_>>(), ["Host: x", "content-LENGTH: 5"]);
        assert_eq!((requests[1].line(), requests[1].header("host")), ("GET /b HTTP/1.1", None));
    }
}
