//! `netprobe`: a raw JSON-RPC test plugin for the network of a process.
//!
//! It answers the one request the core writes to its stdin. TCP and UDP go
//! through `std::net` (wasi-libc on `wasi:sockets`), as real plugins use
//! them; error codes and HTTP go through the raw bindings of the `wasip2`
//! crate, so that the exact WASI values can be checked.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    self as http, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions,
    Scheme,
};
use wasip2::io::streams::StreamError;
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress};
use wasip2::sockets::tcp_create_socket::create_tcp_socket;

use rawrpc::{next_message, reply, reply_error};

type Outcome = Result<Value, String>;

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("netprobe: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let p = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    let outcome = match method.as_str() {
        "listen" => listen(&p),
        "connect" => connect(&p),
        "tcp_error" => tcp_error(&p),
        "tcp_options" => tcp_options(),
        "tcp_limit" => tcp_limit(&p),
        "udp_echo" => udp_echo(&p),
        "udp_serve" => udp_serve(&p),
        "resolve" => resolve(&p),
        "http" => http_request(&p),
        "http_bench" => http_bench(&p),
        _ => {
            reply_error(&id, -32601, &format!("netprobe has no method {method}"));
            return;
        }
    };
    match outcome {
        Ok(v) => reply(&id, v),
        Err(e) => reply_error(&id, 1, &e),
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The WIT name of a socket error code, e.g. `connection-refused`.
fn code(e: wasip2::sockets::network::ErrorCode) -> String {
    e.name().to_string()
}

/// Writes `content` to `path` atomically: a temporary file, then a rename (PROTOCOL 5).
fn write_atomically(path: &str, content: &str) -> Result<(), String> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, content).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Binds 127.0.0.1:0, writes `tcp:ADDRESS` to `file`, then serves `count`
/// connections one after the other: each line that arrives goes back as
/// `echo: LINE`, until the client closes.
fn listen(p: &Value) -> Outcome {
    let file = p["file"].as_str().ok_or("params.file is missing")?;
    let count = p["count"].as_u64().unwrap_or(1);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(err)?;
    let address = listener.local_addr().map_err(err)?;
    write_atomically(file, &format!("tcp:{address}\n"))?;
    let mut lines = 0;
    let mut peers = vec![];
    for _ in 0..count {
        let (stream, peer) = listener.accept().map_err(err)?;
        peers.push(peer.to_string());
        // one stream for both directions: try_clone does not work on this target
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(err)? == 0 {
                break;
            }
            let answer = format!("echo: {}\n", line.trim_end());
            reader.get_mut().write_all(answer.as_bytes()).map_err(err)?;
            lines += 1;
        }
    }
    Ok(json!({"address": address.to_string(), "lines": lines, "peers": peers}))
}

/// The address in an endpoint file (`tcp:ADDRESS`), or `params.address`.
fn target(p: &Value) -> Result<String, String> {
    if let Some(a) = p["address"].as_str() {
        return Ok(a.to_string());
    }
    let file = p["file"]
        .as_str()
        .ok_or("params.file or params.address is missing")?;
    let text = std::fs::read_to_string(file).map_err(err)?;
    let line = text.lines().next().unwrap_or("");
    Ok(line.strip_prefix("tcp:").unwrap_or(line).to_string())
}

/// Connects, sends each of `lines` and reads its answer; then `rounds`
/// round trips of a short line, timed.
fn connect(p: &Value) -> Outcome {
    let address = target(p)?;
    let stream = TcpStream::connect(&address).map_err(err)?;
    let local = stream.local_addr().map_err(err)?.to_string();
    let peer = stream.peer_addr().map_err(err)?.to_string();
    let mut reader = BufReader::new(stream);
    let mut answers = vec![];
    let mut line = String::new();
    let mut ask = |reader: &mut BufReader<TcpStream>, text: &str| -> Result<String, String> {
        reader
            .get_mut()
            .write_all(format!("{text}\n").as_bytes())
            .map_err(err)?;
        line.clear();
        reader.read_line(&mut line).map_err(err)?;
        Ok(line.trim_end().to_string())
    };
    for l in p["lines"].as_array().cloned().unwrap_or_default() {
        answers.push(ask(&mut reader, l.as_str().unwrap_or(""))?);
    }
    let rounds = p["rounds"].as_u64().unwrap_or(0);
    let started = Instant::now();
    for i in 0..rounds {
        let answer = ask(&mut reader, &format!("ping {i}"))?;
        if answer != format!("echo: ping {i}") {
            return Err(format!("round {i}: unexpected answer {answer:?}"));
        }
    }
    let micros = started.elapsed().as_micros() as f64 / rounds.max(1) as f64;
    // the server may still answer after our half-close: read what is left
    reader
        .get_mut()
        .shutdown(std::net::Shutdown::Write)
        .map_err(err)?;
    let mut rest = String::new();
    reader.read_to_string(&mut rest).map_err(err)?;
    Ok(json!({
        "answers": answers, "local": local, "peer": peer,
        "rounds": rounds, "round_trip_us": micros, "rest": rest,
    }))
}

fn ipv4(address: &str) -> Result<IpSocketAddress, String> {
    let sa: std::net::SocketAddrV4 = address.parse().map_err(err)?;
    let [a, b, c, d] = sa.ip().octets();
    Ok(IpSocketAddress::Ipv4(Ipv4SocketAddress {
        port: sa.port(),
        address: (a, b, c, d),
    }))
}

/// Connects with the raw WASI calls and with `std::net`; returns both errors.
fn tcp_error(p: &Value) -> Outcome {
    let address = p["address"].as_str().ok_or("params.address is missing")?;
    let network = instance_network();
    let socket = create_tcp_socket(IpAddressFamily::Ipv4).map_err(code)?;
    let wasi = match socket.start_connect(&network, ipv4(address)?) {
        Err(e) => code(e),
        Ok(()) => loop {
            socket.subscribe().block();
            match socket.finish_connect() {
                Ok(_) => break "connected".to_string(),
                Err(wasip2::sockets::network::ErrorCode::WouldBlock) => continue,
                Err(e) => break code(e),
            }
        },
    };
    let std = match TcpStream::connect(address) {
        Ok(_) => "connected".to_string(),
        Err(e) => format!("{:?}", e.kind()),
    };
    Ok(json!({"wasi": wasi, "std": std}))
}

/// Sets and reads back the options of a TCP socket (raw WASI calls).
fn tcp_options() -> Outcome {
    let network = instance_network();
    let s = create_tcp_socket(IpAddressFamily::Ipv4).map_err(code)?;
    let e = code;
    s.set_keep_alive_enabled(true).map_err(e)?;
    s.set_keep_alive_idle_time(30_000_000_000).map_err(e)?;
    s.set_keep_alive_interval(500_000_000).map_err(e)?; // clamped up to 1 s
    s.set_keep_alive_count(500).map_err(e)?; // clamped down to 127
    s.set_hop_limit(9).map_err(e)?;
    s.set_receive_buffer_size(100_000).map_err(e)?;
    s.set_send_buffer_size(50_000).map_err(e)?;
    s.set_listen_backlog_size(5).map_err(e)?;
    let zero_hop = s.set_hop_limit(0).err().map(code);
    s.start_bind(&network, ipv4("127.0.0.1:0")?).map_err(e)?;
    s.finish_bind().map_err(e)?;
    let bound = format!("{:?}", s.local_address().map_err(e)?);
    let rebind = s.start_bind(&network, ipv4("127.0.0.1:0")?).err().map(code);
    let listen_unfinished = s.finish_listen().err().map(code);
    s.start_listen().map_err(e)?;
    s.finish_listen().map_err(e)?;
    let accept_now = match s.accept() {
        Ok(_) => "accepted".to_string(),
        Err(x) => code(x),
    };
    Ok(json!({
        "keep_alive": s.keep_alive_enabled().map_err(e)?,
        "idle_ns": s.keep_alive_idle_time().map_err(e)?,
        "interval_ns": s.keep_alive_interval().map_err(e)?,
        "count": s.keep_alive_count().map_err(e)?,
        "hop_limit": s.hop_limit().map_err(e)?,
        "receive_buffer": s.receive_buffer_size().map_err(e)?,
        "send_buffer": s.send_buffer_size().map_err(e)?,
        "zero_hop": zero_hop, "bound": bound, "rebind": rebind,
        "listen_unfinished": listen_unfinished, "listening": s.is_listening(),
        "accept_now": accept_now,
        "family": format!("{:?}", s.address_family()),
    }))
}

/// Creates TCP sockets until one fails; returns how many were made and the error.
fn tcp_limit(p: &Value) -> Outcome {
    let max = p["max"].as_u64().unwrap_or(10_000);
    let mut held = vec![];
    let mut error = String::new();
    while (held.len() as u64) < max {
        match create_tcp_socket(IpAddressFamily::Ipv4) {
            Ok(s) => held.push(s),
            Err(e) => {
                error = code(e);
                break;
            }
        }
    }
    let made = held.len();
    held.truncate(made.saturating_sub(1));
    // with one dropped, one more can be made
    let again = create_tcp_socket(IpAddressFamily::Ipv4).is_ok();
    Ok(json!({"made": made, "error": error, "again": again}))
}

/// Sends `count` datagrams to `address` (or, without one, to a second socket
/// of this process that echoes them) and reads the answers.
fn udp_echo(p: &Value) -> Outcome {
    let count = p["count"].as_u64().unwrap_or(3);
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(err)?;
    let local = socket.local_addr().map_err(err)?.to_string();
    let own_echo = match p["address"].as_str() {
        Some(_) => None,
        None => Some(UdpSocket::bind("127.0.0.1:0").map_err(err)?),
    };
    let to = match (&own_echo, p["address"].as_str()) {
        (Some(echo), _) => echo.local_addr().map_err(err)?.to_string(),
        (None, Some(a)) => a.to_string(),
        (None, None) => unreachable!(),
    };
    let mut answers = vec![];
    let mut buf = [0u8; 2048];
    for i in 0..count {
        socket
            .send_to(format!("ping {i}").as_bytes(), &to)
            .map_err(err)?;
        if let Some(echo) = &own_echo {
            let (n, from) = echo.recv_from(&mut buf).map_err(err)?;
            let answer = format!("echo: {}", String::from_utf8_lossy(&buf[..n]));
            echo.send_to(answer.as_bytes(), from).map_err(err)?;
        }
        let (n, from) = socket.recv_from(&mut buf).map_err(err)?;
        answers.push(json!({"data": String::from_utf8_lossy(&buf[..n]), "from": from.to_string()}));
    }
    // a connected socket: send without an address, receive only from the peer
    socket.connect(&to).map_err(err)?;
    socket.send(b"connected").map_err(err)?;
    if let Some(echo) = &own_echo {
        let (n, from) = echo.recv_from(&mut buf).map_err(err)?;
        let answer = format!("echo: {}", String::from_utf8_lossy(&buf[..n]));
        echo.send_to(answer.as_bytes(), from).map_err(err)?;
    }
    let n = socket.recv(&mut buf).map_err(err)?;
    let connected = String::from_utf8_lossy(&buf[..n]).to_string();
    Ok(json!({"local": local, "to": to, "answers": answers, "connected": connected}))
}

/// Binds UDP on 127.0.0.1:0, writes `udp:ADDRESS` to `file`, echoes `count` datagrams.
fn udp_serve(p: &Value) -> Outcome {
    let file = p["file"].as_str().ok_or("params.file is missing")?;
    let count = p["count"].as_u64().unwrap_or(1);
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(err)?;
    let address = socket.local_addr().map_err(err)?;
    write_atomically(file, &format!("udp:{address}\n"))?;
    let mut buf = [0u8; 65536];
    for _ in 0..count {
        let (n, from) = socket.recv_from(&mut buf).map_err(err)?;
        let mut answer = b"echo: ".to_vec();
        answer.extend_from_slice(&buf[..n]);
        socket.send_to(&answer, from).map_err(err)?;
    }
    Ok(json!({"address": address.to_string(), "served": count}))
}

/// Looks `name` up through `std::net` (wasi-libc's getaddrinfo) and through
/// the raw `ip-name-lookup` calls.
fn resolve(p: &Value) -> Outcome {
    let name = p["name"].as_str().ok_or("params.name is missing")?;
    let std = match (name, 80).to_socket_addrs() {
        Ok(addrs) => json!(addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>()),
        Err(e) => json!({"error": format!("{:?}", e.kind()), "message": e.to_string()}),
    };
    let network = instance_network();
    let wasi = match resolve_addresses(&network, name) {
        Err(e) => json!({"error": code(e)}),
        Ok(stream) => {
            let mut found = vec![];
            loop {
                match stream.resolve_next_address() {
                    Ok(Some(IpAddress::Ipv4((a, b, c, d)))) => {
                        found.push(format!("{a}.{b}.{c}.{d}"))
                    }
                    Ok(Some(IpAddress::Ipv6(s))) => found.push(
                        std::net::Ipv6Addr::new(s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7).to_string(),
                    ),
                    Ok(None) => break json!(found),
                    Err(wasip2::sockets::network::ErrorCode::WouldBlock) => {
                        stream.subscribe().block()
                    }
                    Err(e) => break json!({"error": code(e)}),
                }
            }
        }
    };
    Ok(json!({"std": std, "wasi": wasi}))
}

/// Splits `scheme://authority/path?query`.
fn split_url(url: &str) -> Result<(Scheme, String, String), String> {
    let (scheme, rest) = url.split_once("://").ok_or("the url has no scheme")?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_string()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok((scheme, authority.to_string(), path.to_string()))
}

fn method_of(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_string()),
    }
}

/// Writes all of `bytes` through the non-blocking calls, waiting on the stream's pollable.
fn write_all(out: &wasip2::io::streams::OutputStream, mut bytes: &[u8]) -> Result<(), String> {
    while !bytes.is_empty() {
        let room = out.check_write().map_err(|e| stream_error(&e))? as usize;
        if room == 0 {
            out.subscribe().block();
            continue;
        }
        let n = room.min(bytes.len());
        out.write(&bytes[..n]).map_err(|e| stream_error(&e))?;
        bytes = &bytes[n..];
    }
    out.blocking_flush().map_err(|e| stream_error(&e))
}

fn stream_error(e: &StreamError) -> String {
    match e {
        StreamError::Closed => "closed".to_string(),
        StreamError::LastOperationFailed(io) => match http::http_error_code(io) {
            Some(code) => format!("{code:?}"),
            None => io.to_debug_string(),
        },
    }
}

fn ms(v: &Value) -> Option<u64> {
    v.as_u64().map(|ms| ms * 1_000_000)
}

/// One request with `wasi:http`: the body is streamed chunk by chunk (with
/// `delay_ms` between chunks); with `interleave`, one chunk of the response
/// is read after each chunk sent (a full-duplex echo).
fn http_request(p: &Value) -> Outcome {
    let url = p["url"].as_str().ok_or("params.url is missing")?;
    let (scheme, authority, path) = split_url(url)?;
    let mut entries: Vec<(String, Vec<u8>)> = vec![];
    for h in p["headers"].as_array().cloned().unwrap_or_default() {
        entries.push((
            h[0].as_str().unwrap_or("").to_string(),
            h[1].as_str().unwrap_or("").as_bytes().to_vec(),
        ));
    }
    let chunks: Vec<String> = p["chunks"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    if p["content_length"].as_bool() == Some(true) {
        let total: usize = chunks.iter().map(|c| c.len()).sum();
        entries.push(("content-length".into(), total.to_string().into_bytes()));
    }
    let headers = Fields::from_list(&entries).map_err(|e| format!("header: {e:?}"))?;
    let request = OutgoingRequest::new(headers);
    let method = p["method"].as_str().unwrap_or("GET");
    request
        .set_method(&method_of(method))
        .map_err(|_| "bad method")?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|_| "bad scheme")?;
    request
        .set_authority(Some(&authority))
        .map_err(|_| "bad authority")?;
    request
        .set_path_with_query(Some(&path))
        .map_err(|_| "bad path")?;
    let body = request.body().map_err(|_| "no body")?;
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(ms(&p["connect_timeout_ms"]));
    let _ = options.set_first_byte_timeout(ms(&p["first_byte_timeout_ms"]));
    let _ = options.set_between_bytes_timeout(ms(&p["between_bytes_timeout_ms"]));
    let started = Instant::now();
    let future = match outgoing_handler::handle(request, Some(options)) {
        Ok(f) => f,
        Err(e) => return Ok(json!({"error": format!("{e:?}"), "stage": "handle"})),
    };
    let delay = Duration::from_millis(p["delay_ms"].as_u64().unwrap_or(0));
    let interleave = p["interleave"].as_bool() == Some(true);
    let out = body.write().map_err(|_| "no body stream")?;
    let mut response = None;
    let mut response_stream = None;
    let mut interleaved = vec![];
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 && !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if let Err(e) = write_all(&out, chunk.as_bytes()) {
            return Ok(json!({"error": e, "stage": "body"}));
        }
        if interleave {
            if response.is_none() {
                future.subscribe().block();
                let r = match future.get() {
                    Some(Ok(Ok(r))) => r,
                    other => {
                        return Ok(json!({"error": format!("{other:?}"), "stage": "response"}))
                    }
                };
                let b = r.consume().map_err(|_| "no response body")?;
                response_stream = Some(b.stream().map_err(|_| "no stream")?);
                response = Some((r, b));
            }
            let s = response_stream.as_ref().unwrap();
            match s.blocking_read(65536) {
                Ok(bytes) => interleaved.push(String::from_utf8_lossy(&bytes).to_string()),
                Err(e) => return Ok(json!({"error": stream_error(&e), "stage": "interleave"})),
            }
        }
    }
    drop(out);
    if let Err(e) = OutgoingBody::finish(body, None) {
        return Ok(json!({"error": format!("{e:?}"), "stage": "finish"}));
    }
    let (resp, incoming) = match response {
        Some(pair) => pair,
        None => {
            future.subscribe().block();
            let r = match future.get() {
                Some(Ok(Ok(r))) => r,
                Some(Ok(Err(e))) => {
                    return Ok(json!({"error": format!("{e:?}"), "stage": "response"}))
                }
                other => return Ok(json!({"error": format!("{other:?}"), "stage": "response"})),
            };
            let b = r.consume().map_err(|_| "no response body")?;
            (r, b)
        }
    };
    let head_ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = resp.status();
    let headers: Vec<Value> = resp
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| json!([k, String::from_utf8_lossy(&v)]))
        .collect();
    let stream = match response_stream {
        Some(s) => s,
        None => incoming.stream().map_err(|_| "no stream")?,
    };
    let mut received = interleaved.concat().into_bytes();
    let mut reads = interleaved.len();
    let mut body_error = Value::Null;
    loop {
        match stream.blocking_read(65536) {
            Ok(bytes) => {
                reads += 1;
                received.extend_from_slice(&bytes);
            }
            Err(StreamError::Closed) => break,
            Err(e) => {
                body_error = json!(stream_error(&e));
                break;
            }
        }
    }
    drop(stream);
    let trailers = IncomingBody::finish(incoming);
    trailers.subscribe().block();
    let trailers = format!(
        "{:?}",
        trailers
            .get()
            .map(|r| r.map(|r| r.map(|t| t.map(|t| t.entries()))))
    );
    Ok(json!({
        "status": status, "headers": headers, "body": String::from_utf8_lossy(&received),
        "length": received.len(), "reads": reads, "interleaved": interleaved,
        "body_error": body_error, "trailers": trailers, "head_ms": head_ms,
        "total_ms": started.elapsed().as_secs_f64() * 1000.0,
    }))
}

/// `n` GET requests one after the other; the mean time of one, body read included.
fn http_bench(p: &Value) -> Outcome {
    let url = p["url"].as_str().ok_or("params.url is missing")?;
    let n = p["n"].as_u64().unwrap_or(100);
    let (scheme, authority, path) = split_url(url)?;
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..n {
        let request = OutgoingRequest::new(Fields::new());
        request
            .set_scheme(Some(&scheme))
            .map_err(|_| "bad scheme")?;
        request
            .set_authority(Some(&authority))
            .map_err(|_| "bad authority")?;
        request
            .set_path_with_query(Some(&path))
            .map_err(|_| "bad path")?;
        let future = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
        future.subscribe().block();
        let response = match future.get() {
            Some(Ok(Ok(r))) => r,
            other => return Err(format!("{other:?}")),
        };
        let body = response.consume().map_err(|_| "no body")?;
        let stream = body.stream().map_err(|_| "no stream")?;
        loop {
            match stream.blocking_read(65536) {
                Ok(b) => bytes += b.len(),
                Err(StreamError::Closed) => break,
                Err(e) => return Err(stream_error(&e)),
            }
        }
    }
    let mean_ms = started.elapsed().as_secs_f64() * 1000.0 / n.max(1) as f64;
    Ok(json!({"n": n, "mean_ms": mean_ms, "bytes": bytes}))
}
