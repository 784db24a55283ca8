//! The crawl's tables on an object store as Delta Lake tables (docs/object-store.md,
//! "Open tables"): the log entries the object-store layer writes beside its own
//! version manifests, so that stock readers (delta-rs and its Python `deltalake`,
//! polars, DuckDB's `delta_scan`, Spark) read a crawl where it lives.
//!
//! ```text
//! <table>/part-00003-<b3[..32]>.parquet       a data file (plain Parquet, named by content)
//! <table>/_delta_log/<v:020>.json             the table's version v (created once)
//! ```
//!
//! A *table* is every directory of a unit that holds Parquet parts: a versioned
//! dataset (`crawldb/`, `linkdb/`, `hostdb/`, `sitemapdb/`: the files of its
//! `current/`), `pagerank/`, and each dataset of a segment (`segments/<s>/parse_data/`).
//! The version manifest of the unit records each table's log version, table id and
//! schema ([`TableLog`]), so the log entry of a unit version is a function of that
//! version's manifest and the one before it ([`commit_body`]): whoever writes it
//! (the committer, or the next writer or `gc` repairing a committer that died) writes
//! the same bytes. Every file carries `partitionValues.part` (its partition: the
//! number in its name), so a reader prunes to one partition of hosts, and the blake3
//! of its content in `tags.blake3`.
//!
//! This module knows the log format only; which files and versions exist is the
//! object-store layer's ([`super::object`]).

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The log directory of a table.
pub const LOG_DIR: &str = "_delta_log";
/// The partition column every table has: the trawl partition of the file's rows.
pub const PART_COLUMN: &str = "part";
/// Hex digits of the content hash in a data file's name.
const HASH_DIGITS: usize = 32;

/// What a unit's version manifest records of one of its tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableLog {
    /// The table's log version that this unit version is (0, 1, ...).
    pub version: u64,
    /// The table's id (the Delta `metaData.id`), fixed at version 0.
    pub id: String,
    /// The table's schema, as the Delta `schemaString` (the partition column
    /// included).
    pub schema: String,
}

/// A data file of a table in one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Its path inside the table (`part-00003-<hash>.parquet`).
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// blake3 of its content (hex).
    pub blake3: String,
    /// Rows, when known.
    pub rows: Option<u64>,
    /// Its partition, when its name has one.
    pub part: Option<usize>,
}

/// The table directory and file name of `name` (a path inside a unit) when it is a
/// data file of a table: a Parquet file that is not hidden.
pub fn table_file(name: &str) -> Option<(&str, &str)> {
    let (dir, file) = match name.rsplit_once('/') {
        Some((d, f)) => (d, f),
        None => ("", name),
    };
    let hidden = file.starts_with('_') || file.starts_with('.');
    (file.ends_with(".parquet") && !hidden).then_some((dir, file))
}

/// The name of a data file on the store: its local name with the first hex digits of
/// its blake3 (`part-00003.parquet` -> `part-00003-<hash>.parquet`), so that a new
/// content never overwrites an old one and an unchanged part keeps its key.
pub fn data_name(file: &str, blake3: &str) -> String {
    let stem = file.strip_suffix(".parquet").unwrap_or(file);
    let hash = blake3.get(..HASH_DIGITS).unwrap_or(blake3);
    format!("{stem}-{hash}.parquet")
}

/// Whether a file name on the store is a data file's ([`data_name`]).
pub fn is_data_name(file: &str) -> bool {
    file.strip_suffix(".parquet")
        .and_then(|stem| stem.rsplit_once('-'))
        .is_some_and(|(_, hash)| {
            hash.len() == HASH_DIGITS && hash.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// `_delta_log/<v:020>.json`.
pub fn log_name(version: u64) -> String {
    format!("{LOG_DIR}/{version:020}.json")
}

/// A table id in the UUID form Delta writers use, derived from `seed`.
pub fn table_id(seed: &str) -> String {
    let h = blake3::hash(seed.as_bytes()).to_hex();
    let h = h.as_str();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The Delta type of an Arrow type (the types trawl's datasets use); `Err` names
/// what Delta cannot express.
fn delta_type(t: &DataType) -> std::result::Result<Value, String> {
    Ok(match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => json!("string"),
        DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8 | DataType::LargeUtf8) => {
            json!("string")
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => json!("binary"),
        DataType::Boolean => json!("boolean"),
        DataType::Int8 => json!("byte"),
        DataType::Int16 => json!("short"),
        DataType::Int32 => json!("integer"),
        DataType::Int64 => json!("long"),
        // Delta has no unsigned types. trawl's datasets have none (a test checks
        // each); an older segment's `simhash` (uint64) is declared `long`, which
        // readers that check types exactly (polars) refuse: docs/object-store.md.
        DataType::UInt8 => json!("short"),
        DataType::UInt16 => json!("integer"),
        DataType::UInt32 | DataType::UInt64 => json!("long"),
        DataType::Float32 => json!("float"),
        DataType::Float64 => json!("double"),
        DataType::Date32 => json!("date"),
        DataType::Decimal128(p, s) => json!(format!("decimal({p},{s})")),
        // Delta's timestamp is microseconds in UTC; readers widen milliseconds.
        DataType::Timestamp(TimeUnit::Millisecond | TimeUnit::Microsecond, Some(_)) => {
            json!("timestamp")
        }
        DataType::List(f) | DataType::LargeList(f) => json!({
            "type": "array",
            "elementType": delta_type(f.data_type())?,
            "containsNull": f.is_nullable(),
        }),
        DataType::Struct(fields) => json!({
            "type": "struct",
            "fields": fields
                .iter()
                .map(|f| delta_field(f))
                .collect::<std::result::Result<Vec<_>, _>>()?,
        }),
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(format!("a map of {}", entries.data_type()));
            };
            let (Some(k), Some(v)) = (kv.first(), kv.get(1)) else {
                return Err("a map without key and value".to_string());
            };
            json!({
                "type": "map",
                "keyType": delta_type(k.data_type())?,
                "valueType": delta_type(v.data_type())?,
                "valueContainsNull": v.is_nullable(),
            })
        }
        other => return Err(format!("the type {other}")),
    })
}

fn delta_field(f: &Field) -> std::result::Result<Value, String> {
    let t = delta_type(f.data_type()).map_err(|e| format!("column `{}`: {e}", f.name()))?;
    Ok(json!({"name": f.name(), "type": t, "nullable": f.is_nullable(), "metadata": {}}))
}

/// The Delta `schemaString` of a table whose files have `schema`: its columns and
/// the partition column. `Err` names a column Delta cannot type.
pub fn schema_string(schema: &Schema) -> std::result::Result<String, String> {
    let mut fields = schema
        .fields()
        .iter()
        .map(|f| delta_field(f))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    fields.push(json!({"name": PART_COLUMN, "type": "integer", "nullable": true, "metadata": {}}));
    Ok(json!({"type": "struct", "fields": fields}).to_string())
}

/// The Arrow schema of a Parquet file from its footer (the bytes before the last 8),
/// `footer` being exactly the encoded metadata.
pub fn footer_schema(footer: &[u8]) -> std::result::Result<Schema, String> {
    let meta = parquet::file::metadata::ParquetMetaDataReader::decode_metadata(footer)
        .map_err(|e| e.to_string())?;
    let file = meta.file_metadata();
    parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
        .map_err(|e| e.to_string())
}

/// The length of a Parquet footer from the file's last 8 bytes (`len` then `PAR1`).
pub fn footer_len(tail: &[u8]) -> Option<u64> {
    let tail = tail.get(tail.len().checked_sub(8)?..)?;
    if &tail[4..] != b"PAR1" {
        return None;
    }
    Some(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as u64)
}

/// One table's change from one unit version to the next.
#[derive(Debug)]
pub struct Change<'a> {
    /// The table's log in the version before (`None`: the table starts here).
    pub before_log: Option<&'a TableLog>,
    /// Its log in this version.
    pub log: &'a TableLog,
    /// Its files in the version before.
    pub before: &'a [DataFile],
    /// Its files in this version.
    pub after: &'a [DataFile],
    /// When the unit version was written (ms UTC): every timestamp of the entry.
    pub time: i64,
    /// What `commitInfo.trawl` says (the unit, its version, the stage).
    pub info: Value,
}

fn part_values(f: &DataFile) -> Value {
    json!({ PART_COLUMN: f.part.map(|p| p.to_string()) })
}

/// The log entry of `c` (newline-delimited JSON actions): `commitInfo`, at version
/// 0 `protocol`, when the schema is new `metaData`, a `remove` for each file gone
/// and an `add` for each file new. A function of its arguments only.
pub fn commit_body(c: &Change<'_>) -> Vec<u8> {
    let mut lines: Vec<Value> = vec![json!({"commitInfo": {
        "timestamp": c.time,
        "operation": "WRITE",
        "operationParameters": {"mode": "Overwrite"},
        "isBlindAppend": false,
        // No release number: a repair by another release writes the same bytes.
        "engineInfo": "trawl",
        "trawl": c.info,
    }})];
    if c.before_log.is_none() {
        lines.push(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}));
    }
    if c.before_log
        .is_none_or(|b| b.schema != c.log.schema || b.id != c.log.id)
    {
        lines.push(json!({"metaData": {
            "id": c.log.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": c.log.schema,
            "partitionColumns": [PART_COLUMN],
            "configuration": {},
            "createdTime": c.time,
        }}));
    }
    let listed = |files: &[DataFile], path: &str| files.iter().any(|f| f.path == path);
    // A table that starts here lists every file (the version before had no log).
    let before: &[DataFile] = if c.before_log.is_some() {
        c.before
    } else {
        &[]
    };
    for f in before.iter().filter(|f| !listed(c.after, &f.path)) {
        lines.push(json!({"remove": {
            "path": f.path,
            "deletionTimestamp": c.time,
            "dataChange": true,
            "extendedFileMetadata": true,
            "partitionValues": part_values(f),
            "size": f.size,
        }}));
    }
    for f in c.after.iter().filter(|f| !listed(before, &f.path)) {
        let mut add = json!({
            "path": f.path,
            "partitionValues": part_values(f),
            "size": f.size,
            "modificationTime": c.time,
            "dataChange": true,
            "tags": {"blake3": f.blake3},
        });
        if let Some(rows) = f.rows {
            add["stats"] = json!(json!({"numRecords": rows}).to_string());
        }
        lines.push(json!({ "add": add }));
    }
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn names() {
        let b3 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            data_name("part-00003.parquet", b3),
            "part-00003-0123456789abcdef0123456789abcdef.parquet"
        );
        assert!(is_data_name(&data_name("part-00003.parquet", b3)));
        assert!(!is_data_name("part-00003.parquet"));
        assert_eq!(
            table_file("parse_data/part-00001.parquet"),
            Some(("parse_data", "part-00001.parquet"))
        );
        assert_eq!(
            table_file("part-00001.parquet"),
            Some(("", "part-00001.parquet"))
        );
        assert_eq!(table_file("parse_data/_SUCCESS"), None);
        assert_eq!(table_file("_meta.json"), None);
        assert_eq!(log_name(7), "_delta_log/00000000000000000007.json");
        assert_eq!(table_id("x").len(), 36);
    }

    #[test]
    fn schemas_map_to_delta_types() {
        let s = Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                true,
            ),
            Field::new(
                "links",
                DataType::List(Arc::new(Field::new("element", DataType::Utf8, false))),
                false,
            ),
            Field::new("metadata", crate::datum::string_map_type(), false),
        ]);
        let text = schema_string(&s).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let fields = v["fields"].as_array().unwrap();
        assert_eq!(fields[1]["type"], "timestamp");
        assert_eq!(fields[2]["type"]["type"], "array");
        assert_eq!(fields[2]["type"]["containsNull"], false);
        assert_eq!(fields[3]["type"]["keyType"], "string");
        assert_eq!(fields[4]["name"], PART_COLUMN);
        let bad = Schema::new(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Second, None),
            true,
        )]);
        assert!(schema_string(&bad).unwrap_err().contains("column `t`"));
    }

    #[test]
    fn a_body_adds_what_is_new_and_removes_what_is_gone() {
        let file = |p: &str, part| DataFile {
            path: p.to_string(),
            size: 10,
            blake3: "ab".to_string(),
            rows: Some(3),
            part,
        };
        let log0 = TableLog {
            version: 0,
            id: table_id("t"),
            schema: "{}".to_string(),
        };
        let log1 = TableLog {
            version: 1,
            ..log0.clone()
        };
        let before = vec![file("a.parquet", Some(0)), file("b.parquet", Some(1))];
        let after = vec![file("a.parquet", Some(0)), file("c.parquet", Some(1))];
        let body = commit_body(&Change {
            before_log: Some(&log0),
            log: &log1,
            before: &before,
            after: &after,
            time: 5,
            info: json!({}),
        });
        let lines: Vec<Value> = String::from_utf8(body)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[1]["remove"]["path"], "b.parquet");
        assert_eq!(lines[2]["add"]["path"], "c.parquet");
        assert_eq!(lines[2]["add"]["partitionValues"]["part"], "1");
        assert_eq!(lines[2]["add"]["tags"]["blake3"], "ab");
        // The first version: protocol, metaData, every file added.
        let body = commit_body(&Change {
            before_log: None,
            log: &log0,
            before: &before,
            after: &after,
            time: 5,
            info: json!({}),
        });
        let text = String::from_utf8(body).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(text.contains("\"protocol\"") && text.contains("\"metaData\""));
        assert!(!text.contains("\"remove\""));
    }
}
