//! Prints the SQLite text of the sequential action cycle's four writes, as
//! JSON `{name: sql}`, for `benches/peer/schema_floor.py --cycle`.

fn main() {
    let map: serde_json::Map<String, serde_json::Value> =
        handoff::store::actions::cycle_statements()
            .into_iter()
            .map(|(name, sql)| (name.to_string(), sql.into()))
            .collect();
    println!("{}", serde_json::Value::Object(map));
}
