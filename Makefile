# The two commands of the README. Everything they need is installed on first use.
.PHONY: run test build
run:
	.ci/dev.sh run
test:
	.ci/dev.sh test
build:
	.ci/dev.sh build
