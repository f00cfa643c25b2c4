//! A client of `notes`, `www` and `secrets` through their generated imports
//! (`sdk/sdk_test.ts` installs it as `client`).

use sausage_plugin::{Result, rpc, schema};

sausage_plugin::import!("notes"); // imports/notes.json
sausage_plugin::import!("www"); // imports/www.json, with its endpoint "control"
sausage_plugin::import!("secrets"); // imports/secrets.json, with its endpoint "vault"

/// The client.
struct Client;

/// A secret to store and read back.
#[schema]
struct Secret {
    /// Its name.
    name: String,
    /// Its value.
    value: String,
    /// The endpoint file of the vault; `/run/secrets` when missing.
    path: Option<String>,
}

/// A running web server.
#[schema]
struct Server {
    /// The process ID of the server.
    pid: String,
}

/// A port.
#[schema]
struct Port {
    /// The TCP port for the web server.
    port: u16,
}

#[rpc]
impl Client {
    /// Store a secret in the vault at `/run/secrets`, then read it back.
    async fn vault(&self, Secret { name, value, path }: Secret) -> Result<Option<String>> {
        let vault = secrets::vault::connect(path.as_deref().unwrap_or("/run/secrets")).await?;
        vault.set(secrets::SetParams { name: name.clone(), value }).await?;
        let names = vault.names().await?;
        eprintln!("the vault has {names:?}");
        vault.get(secrets::NameParams { name }).await
    }

    /// The number of requests that a web server answered.
    async fn hits(&self, Server { pid }: Server) -> Result<u64> {
        let control = www::control::connect(&format!("/proc/{pid}/control")).await?;
        control.stats().await
    }

    /// Stop a web server through its endpoint.
    async fn stop(&self, Server { pid }: Server) -> Result<()> {
        let control = www::control::connect(&format!("/proc/{pid}/control")).await?;
        control.stop().await
    }

    /// Add a note, then start a web server and return its number of answered requests.
    async fn example(&self, Port { port }: Port) -> Result<u64> {
        let added = notes::add(notes::AddParams { text: "milk".into() }).await?;
        eprintln!("{} notes", added.count); // stderr goes to the journal
        let pid = www::start(www::StartParams { port }).detach().await?;
        let control = www::control::connect(&format!("/proc/{pid}/control")).await?;
        control.stats().await
    }
}

fn main() {
    sausage_plugin::run(Client);
}
