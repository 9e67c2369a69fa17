//! Records with provenance, and the tables and plots made from them.

pub mod compare;
pub mod decompose_plot;
pub mod gate;
pub mod plot;
pub mod ratio_plot;
mod record;
mod short;
mod table;

pub use compare::Comparison;
pub use record::{JsonlContents, JsonlWriter, Provenance, Record, TornLine, parse_jsonl, parse_jsonl_as, read_jsonl};
pub use table::{Table, TableStyle, records_table};
