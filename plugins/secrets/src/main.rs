//! Secrets: keeps secrets in memory, for other plugins.
//!
//! Run it as a service: `{"method": "secrets.serve", "params": {}}` in
//! `/config/boot.yaml`. Clients connect to the endpoint `vault` at
//! `/run/secrets`.

use std::{cell::RefCell, collections::BTreeMap, rc::Rc};

use sausage_plugin::{Result, listen, rpc, schema};

/// The secrets plugin.
struct Secrets;

#[rpc(endpoints(vault = Vault))]
impl Secrets {
    /// Open the vault and serve it at `/run/secrets`.
    ///
    /// Returns when the endpoint is ready. The process then lives while the
    /// endpoint listens.
    async fn serve(&self) -> Result<()> {
        listen("/run/secrets", Rc::new(Vault::open()?)).await
    }
}

/// The vault: secrets by name, only in the memory of the serving process.
/// They are gone when it ends.
struct Vault {
    /// The secrets by name.
    secrets: RefCell<BTreeMap<String, String>>,
}

impl Vault {
    /// An empty vault.
    fn open() -> Result<Vault> {
        Ok(Vault {
            secrets: RefCell::new(BTreeMap::new()),
        })
    }
}

/// The params of `set`.
#[schema]
struct SetParams {
    /// The name of the secret, for example `openrouter-key`.
    name: String,
    /// The secret.
    value: String,
}

/// The params of `get` and `remove`.
#[schema]
struct NameParams {
    /// The name of the secret.
    name: String,
}

#[rpc]
impl Vault {
    /// Store a secret under a name, in place of the one before.
    fn set(&self, SetParams { name, value }: SetParams) -> Result<()> {
        self.secrets.borrow_mut().insert(name, value);
        Ok(())
    }

    /// The secret with this name, or `null` when there is none.
    fn get(&self, NameParams { name }: NameParams) -> Result<Option<String>> {
        Ok(self.secrets.borrow().get(&name).cloned())
    }

    /// Remove the secret with this name. Returns whether there was one.
    fn remove(&self, NameParams { name }: NameParams) -> Result<bool> {
        Ok(self.secrets.borrow_mut().remove(&name).is_some())
    }

    /// The names of all secrets, sorted.
    fn names(&self) -> Result<Vec<String>> {
        Ok(self.secrets.borrow().keys().cloned().collect())
    }
}

fn main() {
    sausage_plugin::run(Secrets);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(name: &str) -> NameParams {
        NameParams { name: name.into() }
    }

    #[test]
    fn the_vault_keeps_secrets_by_name() {
        let vault = Vault::open().unwrap();
        assert_eq!(vault.get(name("key")).unwrap(), None);
        vault
            .set(SetParams {
                name: "key".into(),
                value: "s3cret".into(),
            })
            .unwrap();
        vault
            .set(SetParams {
                name: "another".into(),
                value: "x".into(),
            })
            .unwrap();
        assert_eq!(vault.get(name("key")).unwrap().as_deref(), Some("s3cret"));
        assert_eq!(vault.names().unwrap(), ["another", "key"]);
        assert!(vault.remove(name("key")).unwrap());
        assert!(!vault.remove(name("key")).unwrap());
        assert_eq!(vault.names().unwrap(), ["another"]);
    }
}
