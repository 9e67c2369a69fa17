//! The CLI's argument parser (`dynsmem::cli::Cli`, clap) on arbitrary argument lists,
//! drawn mostly from its own subcommands, flags and edge values so that the fuzzer gets
//! past the first token: no panic (clap's debug assertions check the definitions too).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// Edge values and separators; the subcommands, options and their possible values come from
/// the CLI's own definition ([`words`]), so every registry family and flag is drawn.
const VALUES: &[&str] = &[
    "--help",
    "-h",
    "--version",
    "-V",
    "--",
    "-",
    "0",
    "1",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "0x10",
    "",
    "=",
    "--n=",
    "--block=0",
];

/// Every subcommand name, `--long` option and possible value of `dynsmem::cli::command()`,
/// then [`VALUES`].
fn words() -> &'static [String] {
    static WORDS: OnceLock<Vec<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
            out.push(cmd.get_name().to_string());
            for arg in cmd.get_arguments() {
                out.extend(arg.get_long().map(|l| format!("--{l}")));
                out.extend(arg.get_possible_values().iter().map(|v| v.get_name().to_string()));
            }
            for sub in cmd.get_subcommands() {
                walk(sub, out);
            }
        }
        let mut out = Vec::new();
        walk(&dynsmem::cli::command(), &mut out);
        out.sort();
        out.dedup();
        out.extend(VALUES.iter().map(|v| v.to_string()));
        out
    })
}

#[derive(Debug, arbitrary::Arbitrary)]
enum Token {
    Word(u16),
    Number(u64),
    Float(f64),
    Text(String),
}

fuzz_target!(|tokens: Vec<Token>| {
    let args = tokens.iter().map(|t| match t {
        Token::Word(i) => words()[*i as usize % words().len()].clone(),
        Token::Number(n) => n.to_string(),
        Token::Float(f) => f.to_string(),
        Token::Text(s) => s.clone(),
    });
    // Help and version requests come back as errors too; only a panic is a failure.
    let _ = dynsmem::cli::try_parse_from(std::iter::once("dynsmem".to_string()).chain(args));
});
