//! Records with provenance, and the tables printed from them.

mod record;
mod table;

pub use record::{JsonlWriter, Provenance, Record, read_jsonl};
pub use table::{Table, TableStyle, records_table};
