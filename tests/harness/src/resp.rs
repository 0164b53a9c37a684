//! A minimal RESP2 client over `std::net::TcpStream`, for inspecting and poking nodes.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The timeout [`command`] uses for connecting, writing and reading.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Bulk strings longer than this are refused as malformed (Redis's own limit).
const MAX_BULK: usize = 512 * 1024 * 1024;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A null bulk string or null array.
    Nil,
    /// An integer reply.
    Int(i64),
    /// A simple string reply, such as `OK` or `PONG`.
    Simple(String),
    /// A bulk string reply.
    Bulk(Vec<u8>),
    /// An array reply.
    Array(Vec<Reply>),
    /// An error reply, such as `ERR unknown command`. A server error is a reply, not an
    /// `io::Error`.
    Error(String),
}

impl Reply {
    /// The integer, if this is an integer reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The bytes of a bulk or simple string reply.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(b) => Some(b),
            Reply::Simple(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    /// True for a null reply.
    pub fn is_nil(&self) -> bool {
        matches!(self, Reply::Nil)
    }

    /// True for an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Turns an error reply into an `io::Error` (kind `Other`), keeping every other reply.
    pub fn into_result(self) -> io::Result<Reply> {
        match self {
            Reply::Error(e) => Err(io::Error::other(e)),
            r => Ok(r),
        }
    }
}

/// Where a node takes the harness's own commands: its TCP address, or for a TLS node (which
/// takes no plain TCP) its Unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A plain TCP address.
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(std::path::PathBuf),
}

impl Endpoint {
    /// Sends one command on a fresh connection and reads its reply; see [`command_timeout`].
    pub fn command_timeout(&self, args: &[&[u8]], timeout: Duration) -> io::Result<Reply> {
        match self {
            Endpoint::Tcp(addr) => command_timeout(*addr, args, timeout),
            Endpoint::Unix(path) => {
                let mut stream = send_unix(path, args, timeout)?;
                read_reply(&mut BufReader::new(&mut stream))
            }
        }
    }

    /// Writes one command on a fresh connection and reads (and drops) its reply on a
    /// background thread: for a command that blocks the node, such as `DEBUG SLEEP`.
    pub(crate) fn send_detached(&self, args: &[&[u8]], timeout: Duration) -> io::Result<()> {
        match self {
            Endpoint::Tcp(addr) => {
                let stream = send(*addr, args, timeout)?;
                std::thread::spawn(move || read_reply(&mut BufReader::new(stream)));
            }
            Endpoint::Unix(path) => {
                let stream = send_unix(path, args, timeout)?;
                std::thread::spawn(move || read_reply(&mut BufReader::new(stream)));
            }
        }
        Ok(())
    }
}

fn send_unix(
    path: &std::path::Path,
    args: &[&[u8]],
    timeout: Duration,
) -> io::Result<std::os::unix::net::UnixStream> {
    let mut stream = std::os::unix::net::UnixStream::connect(path)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&encode(args))?;
    Ok(stream)
}

/// Sends one command on a fresh connection and reads its reply, with [`DEFAULT_TIMEOUT`].
pub fn command(addr: SocketAddr, args: &[&[u8]]) -> io::Result<Reply> {
    command_timeout(addr, args, DEFAULT_TIMEOUT)
}

/// Sends one command on a fresh connection and reads its reply. `timeout` bounds the connect,
/// the write and the read each; a read that times out returns `ErrorKind::TimedOut`.
pub fn command_timeout(addr: SocketAddr, args: &[&[u8]], timeout: Duration) -> io::Result<Reply> {
    let stream = send(addr, args, timeout)?;
    read_reply(&mut BufReader::new(stream))
}

/// Connects, sets both socket timeouts and writes one command. The caller reads the reply.
pub(crate) fn send(addr: SocketAddr, args: &[&[u8]], timeout: Duration) -> io::Result<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    stream.write_all(&encode(args))?;
    Ok(stream)
}

/// Encodes a command as a RESP2 array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one RESP2 reply. Socket read timeouts come back as `ErrorKind::TimedOut`.
pub fn read_reply<R: BufRead>(r: &mut R) -> io::Result<Reply> {
    read_inner(r).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => io::Error::new(io::ErrorKind::TimedOut, "read timed out"),
        _ => e,
    })
}

fn read_inner<R: BufRead>(r: &mut R) -> io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_first().ok_or_else(|| bad("empty line"))?;
    let text = || String::from_utf8_lossy(rest).into_owned();
    match kind {
        b'+' => Ok(Reply::Simple(text())),
        b'-' => Ok(Reply::Error(text())),
        b':' => Ok(Reply::Int(parse_int(rest)?)),
        b'$' => {
            let Ok(len) = usize::try_from(parse_int(rest)?) else {
                return Ok(Reply::Nil);
            };
            if len > MAX_BULK {
                return Err(bad("bulk string too long"));
            }
            let mut buf = vec![0; len + 2];
            r.read_exact(&mut buf)?;
            if !buf.ends_with(b"\r\n") {
                return Err(bad("bulk string not terminated by CRLF"));
            }
            buf.truncate(len);
            Ok(Reply::Bulk(buf))
        }
        b'*' => {
            let Ok(n) = usize::try_from(parse_int(rest)?) else {
                return Ok(Reply::Nil);
            };
            // Do not trust the length for preallocation.
            let mut items = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                items.push(read_inner(r)?);
            }
            Ok(Reply::Array(items))
        }
        other => Err(bad(&format!("unknown reply type byte {other:#04x}"))),
    }
}

fn read_line<R: BufRead>(r: &mut R) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    // Bounded: a reply header is short; the cap guards against garbage.
    r.by_ref().take(64 * 1024).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("reply line not terminated by CRLF"));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn parse_int(s: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad integer"))
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("RESP: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[u8]) -> io::Result<Reply> {
        read_reply(&mut &s[..])
    }

    #[test]
    fn encodes_commands() {
        assert_eq!(
            encode(&[b"SET", b"k", b""]),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn parses_every_type() {
        assert_eq!(parse(b"+OK\r\n").unwrap(), Reply::Simple("OK".into()));
        assert_eq!(parse(b"-ERR x\r\n").unwrap(), Reply::Error("ERR x".into()));
        assert_eq!(parse(b":-42\r\n").unwrap().as_int(), Some(-42));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(parse(b"*-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(
            parse(b"$4\r\na\r\nb\r\n").unwrap().as_bytes(),
            Some(&b"a\r\nb"[..])
        );
        assert_eq!(
            parse(b"*2\r\n$1\r\nx\r\n:1\r\n").unwrap(),
            Reply::Array(vec![Reply::Bulk(b"x".to_vec()), Reply::Int(1)])
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse(b"").is_err());
        assert!(parse(b"?x\r\n").is_err());
        assert!(parse(b":12").is_err());
        assert!(parse(b"$3\r\nabcd\r\n").is_err());
        assert!(parse(b"*2\r\n:1\r\n").is_err());
    }
}
