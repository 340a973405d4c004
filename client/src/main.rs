//! `memsync`: the command-line client. Its commands arrive with the client issue; today it only
//! reports its version.

fn main() -> std::process::ExitCode {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        Some("--version") | Some("-V") => {
            println!("memsync {}", env!("CARGO_PKG_VERSION"));
            std::process::ExitCode::SUCCESS
        }
        _ => {
            eprintln!("memsync: the client commands are not built yet; see the README");
            std::process::ExitCode::from(2)
        }
    }
}
