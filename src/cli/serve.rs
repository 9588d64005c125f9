//! `handoff serve`: the daemon on this machine's database, in the foreground.

use super::{Ctx, exit, fail};
use crate::store::Store;

pub(super) async fn serve(ctx: &Ctx, listen: Option<std::net::SocketAddr>) -> anyhow::Result<u8> {
    if ctx.remote() {
        return Err(fail(
            exit::INVALID,
            "HANDOFF_URL is set: `handoff serve` runs the daemon here, on a local database; unset HANDOFF_URL to start it",
        ));
    }
    // A daemon with a seeded bug must never serve anyone by mistake (a
    // debug build run by hand): only a test harness opts in.
    if let Some(why) = crate::fault::serve_refusal() {
        return Err(fail(exit::INVALID, why));
    }
    let (cfg, cfg_path) = ctx.config()?;
    let (cfg, cfg_path) = (cfg.clone(), cfg_path.map(std::path::Path::to_path_buf));
    // The daemon may create a database someone named: it is where the
    // file is meant to live, and `serve` says which file it serves.
    let (db, _) = ctx.database_ref()?;
    let (store, shown) = match db {
        crate::config::DatabaseRef::File(path) => {
            (Store::open(&path).await?, path.display().to_string())
        }
        crate::config::DatabaseRef::Postgres(url) => {
            let clock = std::sync::Arc::new(crate::clock::SystemClock);
            let store = Store::open_postgres(&url, clock).await?;
            let shown = store.path().display().to_string();
            (store, shown)
        }
    };
    let addr = listen.unwrap_or(cfg.http.listen);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        fail(
            exit::INTERNAL,
            format!(
                "cannot listen on {addr}: {e}{}",
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    " (is another `handoff serve` running? pick another with --listen or [http] listen)"
                } else {
                    ""
                }
            ),
        )
    })?;
    let local = listener.local_addr()?;
    let ops = crate::ops::Local::new(store.clone(), crate::ops::Policy::of(&cfg));
    if let Some(why) = crate::api::listen_refusal(&ops, cfg.http.open, local).await? {
        return Err(fail(exit::INVALID, why));
    }
    // One plain line on stderr, whatever the log level: scripts and tests
    // read the bound address from it.
    eprintln!(
        "handoff: serving on http://{local} (database {}, API {}, config {})",
        shown,
        if cfg.http.open {
            "open on loopback"
        } else {
            "needs a token"
        },
        cfg_path.map_or("none: defaults".into(), |p| p.display().to_string())
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    crate::daemon::cancel_on_signals(shutdown.clone());
    crate::daemon::run(cfg, store, listener, shutdown).await?;
    Ok(exit::OK)
}
