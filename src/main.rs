//! `dynsmem`: list devices, run and verify one kernel config, benchmark every family: the
//! command line ([`dynsmem::cli::main`]) over the built-in registry.

fn main() -> anyhow::Result<()> {
    dynsmem::cli::main(dynsmem::host::families::FAMILIES)
}
