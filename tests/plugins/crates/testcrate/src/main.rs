//! A plugin with tests of every kind the runner must handle.

fn main() {
    println!("testcrate main");
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};
    use std::io::{BufRead, Write};

    fn core(method: &str, params: Value) -> Value {
        let mut out = std::io::stdout().lock();
        writeln!(out, "\n{}", json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).unwrap();
        out.flush().unwrap();
        drop(out);
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn passes() {
        println!("some output of passes");
    }

    #[test]
    fn panics() {
        eprintln!("about to fail");
        assert_eq!(1, 2, "one is not two");
    }

    #[test]
    #[ignore]
    fn ignored() {}

    #[test]
    #[should_panic]
    fn should_panic() {
        panic!("expected");
    }

    #[test]
    fn reads_a_fixture() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/data.txt")).unwrap();
        assert_eq!(text.trim(), "fixture text");
    }

    #[test]
    fn an_empty_world_of_its_own() {
        let mut names: Vec<String> =
            std::fs::read_dir("/").unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["proc", "run", "self"]);
        std::fs::write("/mark", "x").unwrap(); // the next test never sees it
        assert!(std::fs::read_dir("/run").unwrap().next().is_none());
        std::fs::write("/run/mark", "x").unwrap();
        assert_eq!(std::env::current_dir().unwrap().display().to_string(), "/");
    }

    #[test]
    fn another_empty_world() {
        an_empty_world_of_its_own();
    }

    #[test]
    fn the_runner_answers_core_lock_and_refuses_plugins() {
        assert_eq!(core("core.lock", json!({"path": "/state/x"}))["result"], json!({"held": true}));
        let refused = core("notes.add", json!({"text": "milk"}));
        assert_eq!(refused["error"]["code"], json!(-32001));
        // the core API of a test has no world: no other process to call, stop or kill
        let alone = core("core.call", json!({"method": "notes.add"}));
        assert_eq!(alone["error"]["code"], json!(-32001));
        assert!(alone["error"]["message"].as_str().unwrap().contains("does nothing in a test"));
        // what it says goes to its own journal, and it reads only its own entries there
        assert_eq!(core("core.notify", json!({"name": "step", "params": {"n": 1}}))["result"], json!({}));
        let log = core("core.log", json!({"grep": "^notify step"}));
        assert_eq!(log["result"]["entries"].as_array().unwrap().len(), 1);
        let others = core("core.log", json!({"pid": "someone-else"}));
        assert!(others["result"]["entries"].as_array().unwrap().iter().all(|e| e["pid"] == log["result"]["entries"][0]["pid"]));
    }

    #[test]
    fn proc_shows_the_protocol() {
        let text = std::fs::read_to_string("/proc/core/PROTOCOL.md").unwrap();
        assert!(text.starts_with("# The Sausage protocol"));
        let pid = std::env::var("SAUSAGE_PID").unwrap();
        let info = std::fs::read_to_string(format!("/proc/{pid}/info.json")).unwrap();
        assert!(info.contains("proc_shows_the_protocol"));
    }
}
