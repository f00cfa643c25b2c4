//! Endpoints (PROTOCOL 5): [`listen`] serves an interface on a TCP port of
//! 127.0.0.1 and writes an endpoint file; [`connect`] reads the file,
//! connects, and checks with `rpc.endpoint` that it reached the process the
//! file names.

use crate::call::Call;
use crate::error::{Error, Result};
use crate::interface::{Endpoint, Handler};
use crate::peer::{LineReader, Link, Outbox, Peer, Server};
use crate::runtime;
use serde::Serialize;
use serde_json::{Value, json};
use std::future::Future;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;
use wstd::io::AsyncWrite;
use wstd::iter::AsyncIterator;
use wstd::net::{TcpListener, TcpStream};

/// How long [`connect`] waits for an endpoint file that does not exist yet.
///
/// ```
/// assert_eq!(sausage_plugin::CONNECT_WAIT.as_secs(), 5);
/// ```
pub const CONNECT_WAIT: Duration = Duration::from_secs(5);

/// Serves the endpoint interface `T` on a free TCP port of 127.0.0.1, and
/// writes the endpoint file at `path` when the listener is ready.
///
/// The file has one line, the address, the owner process and the interface,
/// for example `tcp:127.0.0.1:41234 www-0197… control`, and is written in one
/// atomic step. Usually `path` is in `/self` (the process's own folder in
/// `/proc`); a service that others must find uses a fixed path in `/run`.
///
/// `T` must be declared on the main interface with `#[rpc(endpoints(name =
/// T))]`; the compiler says so otherwise. Each connection gets JSON-RPC, one
/// message per line in both directions; `rpc.endpoint` answers `{"owner",
/// "plugin", "interface"}`, and a handler's [`Ctx::notify`](crate::Ctx::notify)
/// goes over the connection as `core.notify {"call", "name", "params"}`.
///
/// Returns when the file is written. The endpoint then listens until the
/// process ends, and the process lives while it listens (PROTOCOL 3.6).
///
/// # Example
///
/// ```no_run
/// use std::rc::Rc;
/// use sausage_plugin::{Result, listen, rpc};
///
/// /// Secrets: keeps secrets in memory.
/// struct Secrets;
///
/// #[rpc(endpoints(vault = Vault))]
/// impl Secrets {
///     /// Serve the vault at `/run/secrets`.
///     async fn serve(&self) -> Result<()> {
///         listen("/run/secrets", Rc::new(Vault)).await
///     }
/// }
///
/// /// The vault.
/// struct Vault;
///
/// #[rpc]
/// impl Vault {
///     /// The number of secrets.
///     fn count(&self) -> Result<u64> {
///         Ok(0)
///     }
/// }
/// # fn main() {}
/// ```
pub fn listen<T: Endpoint>(path: impl AsRef<Path>, value: Rc<T>) -> impl Future<Output = Result<()>> {
    let path = path.as_ref().to_path_buf();
    listen_at(path, value)
}

async fn listen_at<T: Endpoint>(path: std::path::PathBuf, value: Rc<T>) -> Result<()> {
    let path = path.as_path();
    let rt = runtime::current().ok_or_else(|| Error::new("listen runs only inside sausage_plugin::run"))?;
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::new(format!("listen {}: cannot bind a port on 127.0.0.1: {e}", path.display())))?;
    let address = listener.local_addr()?;
    let line = EndpointFile { address: address.to_string(), owner: crate::pid(), interface: T::NAME.to_owned() };
    crate::fs::write_atomic(path, format!("{line}\n"))
        .map_err(|e| Error::new(format!("listen: cannot write the endpoint file {}: {e}", path.display())))?;
    let handler: Rc<dyn Handler> = value;
    let rt2 = Rc::clone(&rt);
    runtime::spawn_task(&rt, true, async move {
        let mut incoming = listener.incoming();
        while let Some(stream) = incoming.next().await {
            match stream {
                Ok(stream) => {
                    let server = Server { handler: Rc::clone(&handler), endpoint: Some(T::NAME) };
                    let outbox = Rc::new(Outbox::default());
                    let peer = Peer::new(Link::Tcp(Rc::clone(&outbox)), Some(server), format!("endpoint {}", T::NAME));
                    runtime::spawn_task(&rt2, false, serve_connection(stream, peer, outbox));
                }
                Err(e) => eprintln!("sausage-plugin: endpoint {}: accept failed: {e}", T::NAME),
            }
        }
    });
    Ok(())
}

/// Reads and writes one connection until it closes.
async fn serve_connection(stream: TcpStream, peer: Rc<Peer>, outbox: Rc<Outbox>) {
    let read = async {
        let mut lines = LineReader::default();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match wstd::io::AsyncRead::read(&mut &stream, &mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    for line in lines.push(&buffer[..n]) {
                        peer.receive_line(&line);
                    }
                }
            }
        }
        if let Some(line) = lines.finish() {
            peer.receive_line(&line);
        }
    };
    let write = async {
        while let Some(bytes) = outbox.next().await {
            if (&stream).write_all(&bytes).await.is_err() {
                break;
            }
        }
    };
    futures_lite::future::or(read, write).await;
    peer.close(Error::new("the endpoint connection closed"));
}

/// One line of an endpoint file: `tcp:<address> <owner> <interface>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointFile {
    pub(crate) address: String,
    pub(crate) owner: String,
    pub(crate) interface: String,
}

impl std::fmt::Display for EndpointFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tcp:{} {} {}", self.address, self.owner, self.interface)
    }
}

impl EndpointFile {
    pub(crate) fn parse(text: &str) -> Option<EndpointFile> {
        let mut parts = text.split_whitespace();
        let address = parts.next()?.strip_prefix("tcp:")?;
        let owner = parts.next()?;
        let interface = parts.next()?;
        if parts.next().is_some() || address.parse::<std::net::SocketAddr>().is_err() {
            return None;
        }
        Some(EndpointFile { address: address.to_owned(), owner: owner.to_owned(), interface: interface.to_owned() })
    }
}

/// The plugin of a process ID `<plugin>-<uuid>`.
pub(crate) fn plugin_of(pid: &str) -> &str {
    // a UUID is 36 characters; the plugin name is before the hyphen before it
    if pid.len() > 37 && pid.is_char_boundary(pid.len() - 37) && pid.as_bytes()[pid.len() - 37] == b'-' {
        &pid[..pid.len() - 37]
    } else {
        pid
    }
}

/// Connects to the endpoint whose file is at `path`.
///
/// It reads the file (waiting up to [`CONNECT_WAIT`] while it does not
/// exist, for example while the services start), connects to the address,
/// and sends `rpc.endpoint`. If the answer does not name the owner and the
/// interface of the file, `connect` fails: a stale file or a reused port
/// cannot connect you to the wrong process.
///
/// The interface's generated module ([`import!`](crate::import)) has a typed
/// `connect`; this one is untyped.
///
/// # Example
///
/// ```no_run
/// # async fn f() -> sausage_plugin::Result<()> {
/// let connection = sausage_plugin::connect("/run/secrets").await?;
/// assert_eq!(connection.interface(), "vault");
/// let value = connection.call("get", serde_json::json!({"name": "token"})).await?;
/// # Ok(()) }
/// ```
pub async fn connect(path: impl AsRef<Path>) -> Result<Connection> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let text = read_endpoint_file(path).await?;
    let Some(file) = EndpointFile::parse(&text) else {
        return Err(Error::new(format!(
            "{shown} is not an endpoint file: expected one line `tcp:<host>:<port> <owner> <interface>`, found {:?}",
            text.trim()
        )));
    };
    let rt = runtime::current()
        .ok_or_else(|| Error::new("connect runs only inside sausage_plugin::run or #[sausage_plugin::test]"))?;
    let stream = TcpStream::connect(file.address.as_str())
        .await
        .map_err(|e| Error::new(format!("cannot connect to {} ({shown}): {e}", file.address)))?;
    let outbox = Rc::new(Outbox::default());
    let peer = Peer::new(Link::Tcp(Rc::clone(&outbox)), None, format!("the connection to {shown}"));
    runtime::spawn_task(&rt, false, serve_connection(stream, Rc::clone(&peer), outbox));
    let connection =
        Connection { peer: Rc::clone(&peer), _open: Rc::new(Open(peer)), file: file.clone(), path: shown.clone() };
    let identity = connection.call("rpc.endpoint", ()).await?;
    let owner = identity.get("owner").and_then(Value::as_str).unwrap_or("");
    let plugin = identity.get("plugin").and_then(Value::as_str).unwrap_or("");
    let interface = identity.get("interface").and_then(Value::as_str).unwrap_or("");
    if owner != file.owner || interface != file.interface || plugin != plugin_of(&file.owner) {
        return Err(Error::new(format!(
            "{shown} is stale: it names {} {}, but {} is {owner} {interface} (plugin {plugin})",
            file.owner, file.interface, file.address
        )));
    }
    Ok(connection)
}

async fn read_endpoint_file(path: &Path) -> Result<String> {
    let start = std::time::Instant::now();
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => return Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && start.elapsed() < CONNECT_WAIT => {
                wstd::task::sleep(wstd::time::Duration::from_millis(50)).await;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::new(format!(
                    "there is no endpoint file {} (waited {} s): is the process that serves it running?",
                    path.display(),
                    CONNECT_WAIT.as_secs()
                )));
            }
            Err(e) => return Err(Error::new(format!("cannot read the endpoint file {}: {e}", path.display()))),
        }
    }
}

/// A connection to an endpoint, made by [`connect`]. It closes when the last
/// clone drops.
///
/// # Example
///
/// ```no_run
/// # async fn f() -> sausage_plugin::Result<()> {
/// let control = sausage_plugin::connect("/run/www").await?;
/// let hits: u64 = control.call("stats", ()).returning().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connection {
    peer: Rc<Peer>,
    _open: Rc<Open>,
    file: EndpointFile,
    path: String,
}

impl Connection {
    /// Calls `method` of the endpoint interface (without a plugin prefix).
    /// The result is a JSON value; [`Call::returning`] converts it, and
    /// [`Call::on_notify`] receives the handler's notifications.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let vault = sausage_plugin::connect("/run/secrets").await?;
    /// vault.call("set", serde_json::json!({"name": "key", "value": "s3cret"})).await?;
    /// let names: Vec<String> = vault.call("names", ()).returning().await?;
    /// # Ok(()) }
    /// ```
    pub fn call(&self, method: &str, params: impl Serialize) -> Call<Value> {
        Call::build(Some(Rc::clone(&self.peer)), method, params)
    }

    /// Sends a notification (no answer).
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let control = sausage_plugin::connect("/run/www").await?;
    /// control.notify("reload", ());
    /// # Ok(()) }
    /// ```
    pub fn notify(&self, method: &str, params: impl Serialize) {
        self.peer.notify(method, serde_json::to_value(params).unwrap_or_else(|_| json!({})));
    }

    /// Fails unless the endpoint serves the interface `name`. The generated
    /// `connect` of an imported endpoint calls it.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let connection = sausage_plugin::connect("/run/secrets").await?;
    /// connection.check_interface("vault")?;
    /// # Ok(()) }
    /// ```
    pub fn check_interface(&self, name: &str) -> Result<()> {
        if self.file.interface == name {
            Ok(())
        } else {
            Err(Error::new(format!("{} serves the interface `{}`, not `{name}`", self.path, self.file.interface)))
        }
    }

    /// The interface the endpoint serves.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// assert_eq!(sausage_plugin::connect("/run/secrets").await?.interface(), "vault");
    /// # Ok(()) }
    /// ```
    pub fn interface(&self) -> &str {
        &self.file.interface
    }

    /// The process that serves it (checked with `rpc.endpoint`).
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let owner = sausage_plugin::connect("/run/secrets").await?.owner().to_owned();
    /// sausage_plugin::call("core.stop", serde_json::json!({"pid": owner})).await?;
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> &str {
        &self.file.owner
    }

    /// Whether the connection has closed (the other side ended, or this
    /// process is ending). Calls on a closed connection fail at once.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let control = sausage_plugin::connect("/run/www").await?;
    /// if control.is_closed() {
    ///     eprintln!("the server has gone");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }
}

/// Closes the connection when the last clone of a [`Connection`] drops.
struct Open(Rc<Peer>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.close(Error::new("the connection was closed by this process"));
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("path", &self.path).field("endpoint", &self.file.to_string()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_files_round_trip() {
        let file = EndpointFile {
            address: "127.0.0.1:41234".into(),
            owner: "www-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34".into(),
            interface: "control".into(),
        };
        let text = format!("{file}\n");
        assert_eq!(text, "tcp:127.0.0.1:41234 www-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34 control\n");
        assert_eq!(EndpointFile::parse(&text), Some(file));
    }

    #[test]
    fn bad_endpoint_files_are_refused() {
        for text in ["", "tcp:127.0.0.1:1 a", "udp:127.0.0.1:1 a b", "tcp:nohost a b", "tcp:127.0.0.1:1 a b c"] {
            assert_eq!(EndpointFile::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_plugin_of_a_pid() {
        assert_eq!(plugin_of("my-www-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34"), "my-www");
        assert_eq!(plugin_of("short"), "short");
    }
}
