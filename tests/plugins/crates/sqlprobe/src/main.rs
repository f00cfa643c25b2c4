//! `sqlprobe`: SQLite on the host's `wasi:filesystem`.
//!
//! Usage: `sqlprobe [DB]` (default `/sqlprobe.db`). Each check prints `ok NAME`
//! or `FAIL NAME: DETAIL`; the last line is `done PASSED FAILED`, and the exit
//! status is 1 when a check failed.

use rusqlite::{params, Connection};

type Check = Result<(), String>;

fn sql<T>(what: &str, r: rusqlite::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Check {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

fn create_and_fill(db: &str) -> Check {
    let mut conn = sql("open", Connection::open(db))?;
    sql(
        "create",
        conn.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body BLOB);
             CREATE INDEX notes_title ON notes(title);",
        ),
    )?;
    let tx = sql("begin", conn.transaction())?;
    {
        let mut insert = sql(
            "prepare",
            tx.prepare("INSERT INTO notes (title, body) VALUES (?1, ?2)"),
        )?;
        for i in 0..5000 {
            let body = vec![(i % 251) as u8; 100 + i % 400];
            sql(
                "insert",
                insert.execute(params![format!("note {i:05}"), body]),
            )?;
        }
    }
    sql("commit", tx.commit())?;
    let count: i64 = sql(
        "count",
        conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)),
    )?;
    expect_eq("count", count, 5000)
}

fn reopen_and_query(db: &str) -> Check {
    let conn = sql("reopen", Connection::open(db))?;
    let title: String = sql(
        "query",
        conn.query_row("SELECT title FROM notes WHERE id = ?1", [4321], |r| {
            r.get(0)
        }),
    )?;
    expect_eq("title", title, "note 04320".to_string())?;
    let check: String = sql(
        "integrity_check",
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)),
    )?;
    expect_eq("integrity", check, "ok".to_string())
}

fn rollback_journal(db: &str) -> Check {
    let mut conn = sql("open", Connection::open(db))?;
    let tx = sql("begin", conn.transaction())?;
    sql(
        "delete",
        tx.execute("DELETE FROM notes WHERE id % 2 = 0", []),
    )?;
    sql("rollback", tx.rollback())?;
    let count: i64 = sql(
        "count",
        conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)),
    )?;
    expect_eq("after rollback", count, 5000)?;
    let journal = format!("{db}-journal");
    expect_eq(
        "journal removed",
        std::path::Path::new(&journal).exists(),
        false,
    )
}

fn updates_and_vacuum(db: &str) -> Check {
    let conn = sql("open", Connection::open(db))?;
    sql(
        "update",
        conn.execute("UPDATE notes SET title = 'x' || title WHERE id <= 100", []),
    )?;
    sql(
        "delete",
        conn.execute("DELETE FROM notes WHERE id > 4000", []),
    )?;
    sql("vacuum", conn.execute_batch("VACUUM"))?;
    let count: i64 = sql(
        "count",
        conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)),
    )?;
    expect_eq("after vacuum", count, 4000)?;
    let n: i64 = sql(
        "prefix",
        conn.query_row(
            "SELECT count(*) FROM notes WHERE title LIKE 'x%'",
            [],
            |r| r.get(0),
        ),
    )?;
    expect_eq("updated", n, 100)
}

fn big_sort(db: &str) -> Check {
    // Temporary files on disk need fchmod, which WASI lacks (SQLite traps on a
    // null function): keep them in memory, as WASI builds of SQLite should.
    let conn = sql("open", Connection::open(db))?;
    sql(
        "temp_store",
        conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = 10;"),
    )?;
    let mut stmt = sql(
        "prepare",
        conn.prepare("SELECT body FROM notes ORDER BY length(body) DESC, id"),
    )?;
    let rows = sql("query", stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)))?;
    let mut n = 0;
    for row in rows {
        sql("row", row)?;
        n += 1;
    }
    expect_eq("sorted rows", n, 4000)
}

fn two_connections(db: &str) -> Check {
    let a = sql("open a", Connection::open(db))?;
    let b = sql("open b", Connection::open(db))?;
    sql(
        "insert a",
        a.execute("INSERT INTO notes (title) VALUES ('from a')", []),
    )?;
    let seen: i64 = sql(
        "read b",
        b.query_row(
            "SELECT count(*) FROM notes WHERE title = 'from a'",
            [],
            |r| r.get(0),
        ),
    )?;
    expect_eq("b sees a", seen, 1)
}

fn main() {
    let db = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/sqlprobe.db".into());
    let checks: [(&str, fn(&str) -> Check); 6] = [
        ("create_and_fill", create_and_fill),
        ("reopen_and_query", reopen_and_query),
        ("rollback_journal", rollback_journal),
        ("updates_and_vacuum", updates_and_vacuum),
        ("big_sort", big_sort),
        ("two_connections", two_connections),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in checks {
        match check(&db) {
            Ok(()) => {
                passed += 1;
                println!("ok {name}");
            }
            Err(e) => {
                failed += 1;
                println!("FAIL {name}: {e}");
            }
        }
    }
    println!("done {passed} {failed}");
    if failed > 0 {
        std::process::exit(1);
    }
}
