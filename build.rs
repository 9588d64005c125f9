// Re-run the build when a migration is added, so `sqlx::migrate!` embeds it
// (each engine's directory: the store and the tests embed both).
fn main() {
    println!("cargo:rerun-if-changed=migrations/sqlite");
    println!("cargo:rerun-if-changed=migrations/postgres");
}
