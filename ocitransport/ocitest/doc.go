// Package ocitest starts the real OCI registry the tests of ocitransport and
// of 'ampbundle push/pull/sync' run against: the CNCF distribution registry
// (Debian's docker-registry) on loopback, with a storage folder and a
// configuration of the test's own, optionally with TLS (a CA generated for
// the test) and basic auth (an htpasswd file with a bcrypt hash). It also
// finds the crane test tool. Both are installed by scripts/ci-oci.sh; a
// test that needs them fails, naming that script, when they are missing.
package ocitest
