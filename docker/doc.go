// Package docker holds the container image's files: docker/Dockerfile (the
// offline build, make image), docker/layout.sh (the image's file tree, run by
// both Dockerfiles), image.sh, the CI helpers and compose examples
// (compose/compose.yaml: two masters; compose/2m-2s.yaml: two masters with
// a slave each; compose/controller.yaml: three controller nodes and two
// broker sets in controller mode).
//
// The Go package holds only tests of the packaging files, which nothing on
// this machine can build for real (the root Dockerfile needs a registry,
// goreleaser is not installed by the project): dockerfile_test.go parses
// both Dockerfiles and runs layout.sh, release_test.go parses
// .goreleaser.yaml. compose/2m-2s.yaml and its node files are checked by
// cmd/rmq's TestCompose2m2s, which loads them with rmq broker -c's loader;
// compose/controller.yaml and conf/controller by TestConfController.
package docker
