// Package etcdtest starts a real etcd cluster on loopback for tests: the
// members are etcd processes (the binary scripts/ci-etcd.sh installs),
// with their data in the test's temporary directory. A test that cannot
// find the binary fails, naming the script; nothing is faked.
package etcdtest
