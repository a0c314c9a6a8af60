module is-semver

go 1.25.2

require golang.org/x/mod v0.29.0
