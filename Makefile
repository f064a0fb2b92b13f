# The two commands of the README. Everything they need is installed on first use.
.PHONY: run test build image
run:
	.ci/dev.sh run
test:
	.ci/dev.sh test
build:
	.ci/dev.sh build
# The OCI images localhost/posthorn:latest (and :<version>) and the demo's PostgreSQL,
# with buildah from the release build (docs: Deploy with the image alone).
image:
	POSTHORN_PROFILE=release .ci/dev.sh build
	deploy/image/build.sh release
