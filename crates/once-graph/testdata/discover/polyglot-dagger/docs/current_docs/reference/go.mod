module github.com/dagger/dagger/docs/cli-reference

go 1.26.1
