//! A plugin that uses every part of the macros.

use std::rc::Rc;

use sausage_plugin::{Ctx, Endpoint, Result, Retired, listen, on_retired, rpc, schema};

/// The main interface.
struct Main;

/// The params of `put`.
#[schema]
struct PutParams {
    /// The key.
    key: String,
    /// The value, if any.
    value: Option<Item>,
    /// How to store it.
    #[serde(default)]
    mode: Option<Mode>,
}

/// An item.
#[schema]
#[derive(Default)]
struct Item {
    /// The amounts.
    amounts: Vec<u32>,
    /// Ratio.
    ratio: f64,
    /// A nested item.
    child: Option<Box<Item>>,
}

/// How to store.
#[schema]
#[serde(rename_all = "kebab-case")]
enum Mode {
    /// Keep the old value.
    KeepOld,
    /// Replace it.
    Replace,
}

#[rpc(endpoints(admin = Admin), grace_seconds = 30)]
impl Main {
    /// Store an item.
    ///
    /// Replaces the one before, unless `mode` is `keep-old`.
    async fn put(&self, ctx: &Ctx, params: PutParams) -> Result<Option<Item>> {
        ctx.notify("stored", &params.key);
        Ok(params.value)
    }

    /// Serve the admin endpoint.
    async fn admin(&self) -> Result<()> {
        listen("/run/admin", Rc::new(Admin)).await
    }

    /// Migrate.
    #[on_retired]
    fn migrate(&self, Retired { previous }: Retired) -> Result<String> {
        Ok(previous)
    }
}

/// The admin endpoint.
struct Admin;

#[rpc]
impl Admin {
    /// Nothing, after the params.
    fn nothing(&self, params: PutParams, ctx: &Ctx) -> std::result::Result<(), std::io::Error> {
        let _ = (params, ctx);
        Ok(())
    }
}

#[sausage_plugin::test]
async fn a_test() {}

#[sausage_plugin::test]
async fn a_test_with_a_result() -> Result<()> {
    Ok(())
}

fn main() {
    assert_eq!(Admin::NAME, "admin");
    let _ = (Item::default(), Mode::Replace, Mode::KeepOld);
    if false {
        sausage_plugin::run(Main);
    }
}
