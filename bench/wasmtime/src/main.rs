//! The Wasmtime baseline of `deno task bench`: runs a component once per call,
//! in process, as an embedder that cares about call latency does: each
//! component compiled once, `InstancePre` with WASI linked ahead, the pooling
//! allocator, then per call a fresh store with the request in an in-memory
//! stdin, `wasi:cli/run`, and the answer read from an in-memory stdout.
//!
//! It reads commands from stdin, one JSON object a line, and answers each
//! with one line on stdout, so that a benchmark can interleave its calls with
//! its own measurements:
//!
//! ```text
//! {"load": {"name": "probe", "path": "probe.wasm", "request": "{...}",
//!           "expect": "\"result\"", "env": [["SAUSAGE_PID", "bench"]]}}
//!     -> {"loaded": "probe", "compileMs": 210.5}
//! {"run": "probe", "calls": 200}
//!     -> {"run": "probe", "micros": {"total": [...], "instantiate": [...],
//!                                    "run": [...], "drop": [...]}}
//! ```
//!
//! A failure answers `{"error": "..."}`. EOF on stdin ends the program.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use serde_json::{json, Value};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A component ready to run: its `InstancePre` and what one call gets.
struct Loaded {
    pre: CommandPre<State>,
    stdin: Vec<u8>,
    expect: Option<String>,
    env: Vec<(String, String)>,
}

/// The microseconds of one call's stages.
struct Call {
    instantiate: f64,
    run: f64,
    drop: f64,
    total: f64,
}

fn micros(from: Instant, to: Instant) -> f64 {
    to.duration_since(from).as_nanos() as f64 / 1000.0
}

fn one_call(engine: &Engine, c: &Loaded) -> wasmtime::Result<Call> {
    let t0 = Instant::now();
    let stdout = MemoryOutputPipe::new(1 << 20);
    let mut builder = WasiCtx::builder();
    builder
        .stdin(MemoryInputPipe::new(c.stdin.clone()))
        .stdout(stdout.clone())
        .inherit_stderr();
    for (k, v) in &c.env {
        builder.env(k, v);
    }
    let mut store = Store::new(
        engine,
        State {
            wasi: builder.build(),
            table: ResourceTable::new(),
        },
    );
    let command = c.pre.instantiate(&mut store)?;
    let t1 = Instant::now();
    let status = command.wasi_cli_run().call_run(&mut store)?;
    let t2 = Instant::now();
    drop(command);
    drop(store);
    let t3 = Instant::now();
    if status.is_err() {
        wasmtime::bail!("the component's run returned an error");
    }
    if let Some(expect) = &c.expect {
        let out = stdout.contents();
        let text = String::from_utf8_lossy(&out);
        if !text.contains(expect.as_str()) {
            wasmtime::bail!("its stdout does not contain {expect:?}: {text:?}");
        }
    }
    Ok(Call {
        instantiate: micros(t0, t1),
        run: micros(t1, t2),
        drop: micros(t2, t3),
        total: micros(t0, t3),
    })
}

fn engine() -> wasmtime::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    // a few instances at a time, not the default thousand: a small reservation
    pool.total_component_instances(16)
        .total_core_instances(128)
        .total_memories(64)
        .total_tables(128)
        .max_memory_size(256 << 20);
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

fn load(
    engine: &Engine,
    linker: &Linker<State>,
    spec: &Value,
) -> wasmtime::Result<(String, Loaded, f64)> {
    let field = |k: &str| spec[k].as_str().map(str::to_owned);
    let name = field("name").ok_or_else(|| wasmtime::format_err!("load: no name"))?;
    let path = field("path").ok_or_else(|| wasmtime::format_err!("load {name}: no path"))?;
    let request =
        field("request").ok_or_else(|| wasmtime::format_err!("load {name}: no request"))?;
    let env = spec["env"]
        .as_array()
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| Some((p[0].as_str()?.to_owned(), p[1].as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let started = Instant::now();
    let component = Component::from_file(engine, &path)?;
    let pre = CommandPre::new(linker.instantiate_pre(&component)?)?;
    let compile_ms = started.elapsed().as_secs_f64() * 1000.0;
    let stdin = format!("{}\n", request.trim_end()).into_bytes();
    Ok((
        name,
        Loaded {
            pre,
            stdin,
            expect: field("expect"),
            env,
        },
        compile_ms,
    ))
}

fn handle(
    engine: &Engine,
    linker: &Linker<State>,
    loaded: &mut HashMap<String, Loaded>,
    command: &Value,
) -> wasmtime::Result<Value> {
    if let Some(spec) = command.get("load") {
        let (name, c, compile_ms) = load(engine, linker, spec)?;
        one_call(engine, &c)?; // a first call checks the answer before anything is timed
        loaded.insert(name.clone(), c);
        return Ok(json!({"loaded": name, "compileMs": compile_ms}));
    }
    if let Some(name) = command["run"].as_str() {
        let c = loaded
            .get(name)
            .ok_or_else(|| wasmtime::format_err!("run: {name} is not loaded"))?;
        let n = command["calls"].as_u64().unwrap_or(1) as usize;
        let mut calls = Vec::with_capacity(n);
        for _ in 0..n {
            calls.push(one_call(engine, c)?);
        }
        let pick = |f: fn(&Call) -> f64| calls.iter().map(f).collect::<Vec<f64>>();
        return Ok(json!({
            "run": name,
            "micros": {
                "total": pick(|c| c.total),
                "instantiate": pick(|c| c.instantiate),
                "run": pick(|c| c.run),
                "drop": pick(|c| c.drop),
            },
        }));
    }
    wasmtime::bail!("unknown command (expected load or run): {command}")
}

fn main() -> wasmtime::Result<()> {
    let engine = engine()?;
    let mut linker = Linker::<State>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let mut loaded = HashMap::new();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(command) => handle(&engine, &linker, &mut loaded, &command)
                .unwrap_or_else(|e| json!({"error": format!("{e:?}")})),
            Err(e) => json!({"error": format!("not JSON: {e}")}),
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}
