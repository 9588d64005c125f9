//! handoff's approval (its three statements, as `schema_floor.py`
//! renders them) on copies of one database that `handoff` created, with
//! pending actions: (a) through sqlx 0.9 as the write turn sends it
//! (BEGIN, the one multi-statement call, COMMIT: three hand-offs to the
//! connection's worker thread), (a1) the same as one sqlx call, and (b)
//! queued over a channel to a thread that owns a rusqlite connection and
//! runs the transaction in place (one hand-off there and back). Same
//! pragmas. Usage: writer-thread-bench DB STATEMENTS.json IDS.json

use std::time::Instant;

use sqlx::{Connection, Executor};
use tokio::sync::oneshot;

const PRAGMAS: &str = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;";

fn args(id: &str, now: i64) -> Vec<rusqlite::types::Value> {
    use rusqlite::types::Value::*;
    vec![
        Text(id.into()),
        Text("alice".into()),
        Integer(now),
        Null,
        Integer(0),
        Null,
        Null,
        Integer(0),
        Text("cli".into()),
        Null,
    ]
}

async fn via_sqlx(db: &str, sql: &[String], ids: &[String], one_call: bool) -> f64 {
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{db}"))
        .await
        .unwrap();
    c.execute(PRAGMAS).await.unwrap();
    let joined = sql.join(";\n");
    let whole = format!("BEGIN;\n{joined};\nCOMMIT");
    let now = 1i64 << 42;
    let start = Instant::now();
    for id in ids {
        let text = if one_call { &whole } else { &joined };
        let q = sqlx::query(sqlx::AssertSqlSafe(text.as_str()))
            .bind(id)
            .bind("alice")
            .bind(now)
            .bind(None::<String>)
            .bind(0i64)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(0i64)
            .bind("cli")
            .bind(None::<String>);
        if !one_call {
            c.execute("BEGIN").await.unwrap();
        }
        let rows = q.fetch_all(&mut c).await.unwrap();
        if !one_call {
            c.execute("COMMIT").await.unwrap();
        }
        assert_eq!(rows.len(), 1, "approving {id} won");
    }
    ids.len() as f64 / start.elapsed().as_secs_f64()
}

type Job = (String, oneshot::Sender<usize>);

async fn via_thread(db: &str, sql: &[String], ids: &[String]) -> f64 {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let (db, sql) = (db.to_string(), sql.to_vec());
    let writer = std::thread::spawn(move || {
        let mut c = rusqlite::Connection::open(db).unwrap();
        c.execute_batch(PRAGMAS).unwrap();
        let now = 1i64 << 42;
        while let Ok((id, reply)) = rx.recv() {
            let t = c.transaction().unwrap();
            let mut won = 0;
            for q in &sql {
                let mut st = t.prepare_cached(q).unwrap();
                let a = args(&id, now);
                let n = st.parameter_count();
                let mut rows = st.query(rusqlite::params_from_iter(a[..n].iter())).unwrap();
                while rows.next().unwrap().is_some() {
                    won += 1;
                }
            }
            t.commit().unwrap();
            let _ = reply.send(won);
        }
    });
    let start = Instant::now();
    for id in ids {
        let (r, w) = oneshot::channel();
        tx.send((id.clone(), r)).unwrap();
        assert_eq!(w.await.unwrap(), 1, "approving {id} won");
    }
    let rate = ids.len() as f64 / start.elapsed().as_secs_f64();
    drop(tx);
    writer.join().unwrap();
    rate
}

#[tokio::main]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    let sql: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&a[2]).unwrap()).unwrap();
    let ids: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&a[3]).unwrap()).unwrap();
    for (name, case) in [
        ("sqlx, BEGIN + the call + COMMIT", 0),
        ("sqlx, one call with BEGIN/COMMIT", 1),
        ("rusqlite writer thread, a channel", 2),
    ] {
        let copy = format!("{}.case{case}", a[1]);
        std::fs::copy(&a[1], &copy).unwrap();
        let rate = match case {
            0 => via_sqlx(&copy, &sql, &ids, false).await,
            1 => via_sqlx(&copy, &sql, &ids, true).await,
            _ => via_thread(&copy, &sql, &ids).await,
        };
        println!("{name} ({} approvals): {rate:.0}/s", ids.len());
    }
}
