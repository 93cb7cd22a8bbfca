//! `slipway image build`, `slipway engines` and `slipway sandbox create|list|exec|close`.

use super::*;

/// `slipway engines`: every engine of the user's list with its load, pinged at once.
pub(super) fn engines(json: bool) -> Result<ExitCode, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let engines = runtime
        .block_on(slipway_core::engines::status())
        .map_err(|e| CliError::from_failure(&e))?;
    if json {
        print_json(&serde_json::json!({ "engines": engines }));
    } else {
        stdout!("{}", render::engines(&engines));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn image_build(args: args::ImageBuildArgs, json: bool) -> Result<ExitCode, CliError> {
    let mut build_args = Vec::new();
    for pair in &args.build_args {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(CliError::new(
                ErrorKind::InvalidParams,
                format!("--build-arg {pair}: expected KEY=VALUE"),
            ));
        };
        build_args.push((k.to_owned(), v.to_owned()));
    }
    let spec = slipway_core::sandbox::image::ImageBuild {
        context: match args.context {
            Some(c) => c,
            None => std::env::current_dir()?,
        },
        dockerfile: args.file,
        tag: args.tag.clone(),
        build_args,
        network: args.network,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let id = runtime
        .block_on(slipway_core::sandbox::image::build_image(&spec, |line| {
            if !json {
                stderrln!("  │ {line}");
            }
        }))
        .map_err(|e| {
            let hint = match e {
                slipway_core::sandbox::SandboxError::NoDockerfile { .. } => "; pass --file PATH",
                _ => "",
            };
            CliError::new(ErrorKind::ImageBuildFailed, format!("{e}{hint}"))
        })?;
    if json {
        print_json(&serde_json::json!({ "tag": args.tag, "id": id }));
    } else {
        stdoutln!("Built {} ({id})", args.tag);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn sandbox_command(
    host: &HostRepo,
    command: args::SandboxCommand,
    json: bool,
) -> Result<ExitCode, CliError> {
    use slipway_core::run::sandboxes;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let err = |e: sandboxes::SandboxesError| CliError::from_failure(&e);
    match command {
        args::SandboxCommand::Create(a) => {
            let limits = Limits {
                memory_bytes: a.memory,
                pids: a.pids_limit,
            };
            let spec = match (a.sandbox, a.image) {
                (SandboxArg::Docker, image) => SandboxSpec::Docker {
                    image,
                    network: a.network,
                    limits,
                },
                (SandboxArg::DockerIsolated, image) => SandboxSpec::DockerIsolated {
                    image,
                    network: a.network,
                    limits,
                },
                (SandboxArg::None, _) => {
                    return Err(CliError::new(
                        ErrorKind::InvalidParams,
                        "only docker and docker-isolated sandboxes are long-lived",
                    ));
                }
            };
            let record = runtime
                .block_on(sandboxes::create(host, &a.worktree, &spec))
                .map_err(err)?;
            if json {
                print_json(&record);
            } else {
                stdoutln!(
                    "Created sandbox {} (container {}) for {} on {}",
                    record.id,
                    &record.container_id[..record.container_id.len().min(12)],
                    record.worktree_path.display(),
                    record.branch
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        args::SandboxCommand::List => {
            let list = sandboxes::SandboxRecord::list(host);
            if json {
                print_json(&serde_json::json!({ "sandboxes": list }));
            } else if list.is_empty() {
                stdoutln!("No sandboxes.");
            } else {
                for r in list {
                    stdoutln!("{}  {}  {}", r.id, r.branch, r.worktree_path.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        args::SandboxCommand::Exec(a) => {
            if a.command.is_empty() {
                return Err(CliError::new(
                    ErrorKind::InvalidParams,
                    "give the command after `--`",
                ));
            }
            let (code, output) = runtime
                .block_on(sandboxes::exec(host, &a.id, a.command))
                .map_err(err)?;
            if json {
                print_json(&serde_json::json!({ "exitCode": code, "output": output }));
            } else {
                stdout!("{output}");
            }
            Ok(if code == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        args::SandboxCommand::Close(a) => {
            let record = runtime
                .block_on(sandboxes::close(host, &a.id))
                .map_err(err)?;
            if json {
                print_json(
                    &serde_json::json!({ "closed": record.id, "worktreePath": record.worktree_path }),
                );
            } else {
                stdoutln!(
                    "Closed sandbox {}; the worktree {} stays (close it with `slipway worktree close`)",
                    record.id,
                    record.worktree_path.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
