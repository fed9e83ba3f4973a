//! `ebpkg-registry`: the registry server and its administration (see `command_line`).

fn main() -> std::process::ExitCode {
    ebpkg_registry::command_line::main()
}
