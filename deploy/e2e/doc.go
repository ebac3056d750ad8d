// Package e2e tests `make run` end to end: it starts deploy/scripts/run.sh
// as a child, with a temporary HOME and free ports, and checks what a user
// relies on when two instances (host profiles) run on one machine: each has
// its own database and roles and neither's provisioning re-keys the other's,
// the services' (and so their shells' and agents') environment holds none of
// make test's TEST_* variables nor the superuser's URL, a generated first
// password never reaches the logs, the data home's Redis requires its
// password, the previous run's logs are kept, and Ctrl-C is a clean stop
// that exits 0. The package has no code of its own besides the tests.
package e2e
