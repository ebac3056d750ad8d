// Package repocheck holds tests of rules that span the whole workspace:
// every package says what it is for, and the shared libs stay free of the
// web framework and the database driver, except libs/svchttp (fiber) and
// libs/pgmigrate (pgx), with their test kits. It has no code of its own.
package repocheck
