//! `slipway image build` against the real engine: a Dockerfile the user owns,
//! built from the local test image (nothing is pulled), with UID and GID passed.

use crate::common;

use common::*;

#[test]
fn builds_a_usable_agent_image_with_the_host_uid_and_gid() {
    require_docker_image();
    let env = TestEnv::new();
    let context = env.path().join("image");
    std::fs::create_dir_all(&context).expect("dir");
    std::fs::write(
        context.join("Dockerfile"),
        "FROM slipway-test:latest\nARG UID\nARG GID\nARG FLAVOUR=plain\nCOPY hello.txt /etc/hello.txt\nRUN echo \"built for $UID:$GID ($FLAVOUR)\" > /etc/slipway-build\n",
    )
    .expect("dockerfile");
    std::fs::write(context.join("hello.txt"), "hello from the context\n").expect("file");
    let tag = format!("slipway-built-test:{}", std::process::id());
    let built = env.slipway_json(
        &context,
        &[
            "image",
            "build",
            "--tag",
            &tag,
            "--network",
            "none",
            "--build-arg",
            "FLAVOUR=spicy",
        ],
    );
    assert_eq!(built["tag"], tag.as_str());
    assert!(s(&built, "id").starts_with("sha256:"), "{built}");

    let repo = env.new_repo("repo");
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--sandbox",
            "docker",
            "--image",
            &tag,
            "--network",
            "none",
            "--branch",
            "img",
            "--",
            "sh",
            "-c",
            "cat /etc/slipway-build /etc/hello.txt",
        ],
    );
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert!(
        log.contains(&format!("built for {uid}:{gid} (spicy)")),
        "{log}"
    );
    assert!(log.contains("hello from the context"), "{log}");
    let _ = std::process::Command::new("docker")
        .args(["rmi", "-f", &tag])
        .output();
}

#[test]
fn a_failing_build_says_why_and_a_missing_dockerfile_says_how_to_fix_it() {
    require_docker_image();
    let env = TestEnv::new();
    let context = env.path().join("image");
    std::fs::create_dir_all(&context).expect("dir");
    let (_, err) = env.slipway_fail(&context, &["image", "build", "--tag", "slipway-never:1"]);
    assert_eq!(err["kind"], "imageBuildFailed");
    assert!(s(&err, "message").contains("--file"), "{err}");
    std::fs::write(
        context.join("Dockerfile"),
        "FROM slipway-test:latest\nRUN echo 'about to fail' && exit 3\n",
    )
    .expect("dockerfile");
    let (_, err) = env.slipway_fail(
        &context,
        &[
            "image",
            "build",
            "--tag",
            "slipway-never:1",
            "--network",
            "none",
        ],
    );
    assert_eq!(err["kind"], "imageBuildFailed");
    assert!(
        s(&err, "message").contains("about to fail"),
        "the build output is in the error: {err}"
    );
}
