use sausage_plugin::{Ctx, Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Stop.
    fn stop(&self, ctx: Ctx) -> Result<()> {
        ctx.exit_after_response();
        Ok(())
    }
}

fn main() {}
