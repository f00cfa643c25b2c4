//! A web server for the files in `/state/www/`.
//!
//! `start` starts the server in its own process and returns at once. Run it
//! as a service, or call it detached, or the server ends with its caller.
//! The running server serves the endpoint `control` at
//! `/proc/<pid>/control`.

use std::{cell::Cell, rc::Rc};

use sausage_plugin::wstd::io::{AsyncRead, AsyncWrite};
use sausage_plugin::wstd::iter::AsyncIterator;
use sausage_plugin::wstd::net::{TcpListener, TcpStream};
use sausage_plugin::{Ctx, Result, background, listen, pid, rpc, schema};

/// The www plugin.
struct Www;

/// The params of `start`.
#[schema]
struct StartParams {
    /// The TCP port to listen on, on all interfaces.
    port: u16,
}

#[rpc(endpoints(control = Control), grace_seconds = 5)]
impl Www {
    /// Start the web server and return the ID of its process.
    ///
    /// The server runs until it gets `stop` on its endpoint, until
    /// `core.stop`, or until its caller ends. Fails if the port is in use.
    async fn start(&self, StartParams { port }: StartParams) -> Result<String> {
        let tcp = TcpListener::bind(&format!("0.0.0.0:{port}")).await?;
        let control = Rc::new(Control { hits: Cell::new(0) });
        listen("/self/control", control.clone()).await?;
        background(serve(tcp, control)); // the process lives while this task runs
        Ok(pid())
    }
}

/// The control endpoint of a running server.
struct Control {
    /// The number of HTTP requests that the server answered.
    hits: Cell<u64>,
}

#[rpc]
impl Control {
    /// The number of HTTP requests that the server answered since its start.
    fn stats(&self) -> Result<u64> {
        Ok(self.hits.get())
    }

    /// Stop the server. The process ends after this response.
    fn stop(&self, ctx: &Ctx) -> Result<()> {
        ctx.exit_after_response();
        Ok(())
    }
}

/// Accept HTTP connections, and answer each request from `/state/www/`.
async fn serve(tcp: TcpListener, control: Rc<Control>) {
    let mut incoming = tcp.incoming();
    while let Some(stream) = incoming.next().await {
        match stream {
            Ok(stream) => background(answer(stream, control.clone())),
            Err(e) => eprintln!("www: accept failed: {e}"),
        }
    }
}

/// The folder the server serves.
const ROOT: &str = "/state/www";
/// The longest request head the server reads.
const MAX_HEAD: usize = 16 * 1024;

/// Answer the one request of a connection (HTTP/1.0 style: the connection
/// closes after the response).
async fn answer(mut stream: TcpStream, control: Rc<Control>) -> Result<()> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..n]);
    }
    let response = respond(&String::from_utf8_lossy(&head));
    control.hits.set(control.hits.get() + 1);
    stream.write_all(&response.bytes()).await?;
    stream.flush().await?;
    Ok(())
}

/// An HTTP response.
#[derive(Debug, PartialEq)]
struct Response {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
    /// For `HEAD`: the headers only.
    head_only: bool,
}

impl Response {
    fn text(status: u16, reason: &'static str) -> Response {
        let body = format!("{status} {reason}\n").into_bytes();
        Response {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            body,
            head_only: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len()
        )
        .into_bytes();
        if !self.head_only {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

/// The response to a request head: the file under [`ROOT`], `index.html`
/// for a folder.
fn respond(head: &str) -> Response {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Response::text(400, "Bad Request");
    };
    if method != "GET" && method != "HEAD" {
        return Response::text(405, "Method Not Allowed");
    }
    let Some(path) = file_path(target) else {
        return Response::text(404, "Not Found");
    };
    let path = if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
        format!("{path}/index.html")
    } else {
        path
    };
    match std::fs::read(&path) {
        Ok(body) => Response {
            status: 200,
            reason: "OK",
            content_type: content_type(&path),
            body,
            head_only: method == "HEAD",
        },
        Err(_) => Response::text(404, "Not Found"),
    }
}

/// The file for a request target, or `None` when it would leave [`ROOT`].
fn file_path(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let mut clean = String::from(ROOT);
    for segment in path.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if segment == ".." || segment.contains('\\') {
            return None;
        }
        clean.push('/');
        clean.push_str(segment);
    }
    Some(clean)
}

/// The content type of a file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "txt" | "md" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

fn main() {
    sausage_plugin::run(Www);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_the_root() {
        assert_eq!(file_path("/").as_deref(), Some("/state/www"));
        assert_eq!(
            file_path("/a/./b.html?x=1").as_deref(),
            Some("/state/www/a/b.html")
        );
        assert_eq!(file_path("/../etc/passwd"), None);
        assert_eq!(file_path("/a/../../x"), None);
    }

    #[test]
    fn files_are_served_with_their_type() {
        std::fs::create_dir_all("/state/www/docs").unwrap();
        std::fs::write("/state/www/index.html", "<h1>hi</h1>").unwrap();
        std::fs::write("/state/www/docs/a.css", "b {}").unwrap();
        let index = respond("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(
            (index.status, index.content_type),
            (200, "text/html; charset=utf-8")
        );
        assert_eq!(index.body, b"<h1>hi</h1>");
        assert_eq!(
            respond("GET /docs/a.css HTTP/1.0\r\n\r\n").content_type,
            "text/css; charset=utf-8"
        );
        assert_eq!(respond("GET /nothing HTTP/1.0\r\n\r\n").status, 404);
        assert_eq!(respond("POST / HTTP/1.0\r\n\r\n").status, 405);
        assert_eq!(respond("").status, 400);
        let head = respond("HEAD / HTTP/1.0\r\n\r\n");
        assert!(
            String::from_utf8(head.bytes())
                .unwrap()
                .ends_with("Content-Length: 11\r\nConnection: close\r\n\r\n")
        );
    }

    #[test]
    fn control_counts_and_stops() {
        let control = Control { hits: Cell::new(3) };
        assert_eq!(control.stats().unwrap(), 3);
        let ctx = Ctx::new();
        control.stop(&ctx).unwrap();
        assert!(ctx.exits_after_response());
    }
}
