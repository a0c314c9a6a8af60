#!/usr/bin/env bash
# Makes the test-only CA and server certificates of tests/tls.rs (run once; the PEM files are
# committed). Valid for 100 years so that the tests never expire.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
days=36500
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

ec ca-key.pem
openssl req -x509 -new -key ca-key.pem -days "$days" -subj "/CN=once test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.pem

# $1: file stem, $2: subjectAltName.
leaf() {
    ec "$1-key.pem"
    openssl req -new -key "$1-key.pem" -subj "/CN=$1" -out "$1.csr"
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$2" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days "$days" \
        -extfile "$1.ext" -out "$1.pem"
    rm "$1.csr" "$1.ext"
}
leaf server "DNS:localhost,IP:127.0.0.1"
leaf other "DNS:cache.example.invalid"
# The CA's key is not kept: nobody can sign with this CA, whoever trusts it by mistake.
rm -f ca.srl ca-key.pem
