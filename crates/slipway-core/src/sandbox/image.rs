//! `slipway image build`: builds an agent image from a Dockerfile the user
//! owns, through the Engine API, passing the host user's uid and gid as build
//! arguments (`UID`, `GID`) so the image can create a matching user.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures_util::StreamExt;

use super::SandboxError;
use super::docker::connect;

/// What to build.
#[derive(Debug, Clone)]
pub struct ImageBuild {
    /// The build context folder.
    pub context: PathBuf,
    /// The Dockerfile, relative to the context.
    pub dockerfile: String,
    /// The tag, e.g. `slipway-agent:latest`.
    pub tag: String,
    /// Extra build arguments (`UID` and `GID` are always set).
    pub build_args: Vec<(String, String)>,
    /// Network for `RUN` steps; `None` is the engine's default.
    pub network: Option<String>,
}

fn add_context(
    builder: &mut tar::Builder<Vec<u8>>,
    root: &Path,
    rel: &Path,
) -> Result<(), SandboxError> {
    let full = root.join(rel);
    let io = |e: std::io::Error| {
        SandboxError::Other(format!(
            "cannot read the build context {}: {e}",
            full.display()
        ))
    };
    let meta = full.symlink_metadata().map_err(io)?;
    if meta.is_dir() {
        if !rel.as_os_str().is_empty() {
            builder.append_dir(rel, &full).map_err(io)?;
        }
        for entry in std::fs::read_dir(&full).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            // Repository internals never belong in an image context.
            if rel.as_os_str().is_empty() && (name == ".git" || name == ".slipway") {
                continue;
            }
            add_context(builder, root, &rel.join(name))?;
        }
    } else {
        builder.append_path_with_name(&full, rel).map_err(io)?;
    }
    Ok(())
}

/// Builds the image; `on_line` receives the build output. Returns the image id.
pub async fn build_image(
    spec: &ImageBuild,
    mut on_line: impl FnMut(&str),
) -> Result<String, SandboxError> {
    let dockerfile = spec.context.join(&spec.dockerfile);
    if !dockerfile.is_file() {
        return Err(SandboxError::NoDockerfile {
            dockerfile,
            context: spec.context.clone(),
        });
    }
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    add_context(&mut builder, &spec.context, Path::new(""))?;
    let context = builder
        .into_inner()
        .map_err(|e| SandboxError::Other(format!("cannot pack the build context: {e}")))?;
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut args: HashMap<String, String> = HashMap::from([
        ("UID".to_owned(), uid.to_string()),
        ("GID".to_owned(), gid.to_string()),
    ]);
    args.extend(spec.build_args.iter().cloned());
    let mut options = bollard::query_parameters::BuildImageOptionsBuilder::default()
        .dockerfile(&spec.dockerfile)
        .t(&spec.tag)
        .rm(true)
        .forcerm(true)
        .buildargs(&args);
    if let Some(network) = &spec.network {
        options = options.networkmode(network);
    }
    let docker = connect().await?;
    let mut stream = docker.build_image(
        options.build(),
        None,
        Some(bollard::body_full(context.into())),
    );
    let mut image_id = None;
    let mut tail: Vec<String> = Vec::new();
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| SandboxError::Other(format!("the image build failed: {e}")))?;
        if let Some(text) = &info.stream {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                on_line(line);
                tail.push(line.to_owned());
                if tail.len() > 20 {
                    tail.remove(0);
                }
            }
        }
        if let Some(detail) = info.error_detail.and_then(|d| d.message) {
            return Err(SandboxError::Other(format!(
                "the image build failed: {detail}\n{}",
                tail.join("\n")
            )));
        }
        if let Some(aux) = info.aux {
            image_id = aux.id.or(image_id);
        }
    }
    match image_id {
        Some(id) => Ok(id),
        None => docker
            .inspect_image(&spec.tag)
            .await
            .ok()
            .and_then(|i| i.id)
            .ok_or_else(|| {
                SandboxError::Other(format!(
                    "the build finished but {} is not on the engine",
                    spec.tag
                ))
            }),
    }
}
