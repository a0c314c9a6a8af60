module github.com/wundergraph/cosmo/connect-go

go 1.25

require (
	connectrpc.com/connect v1.17.0
	google.golang.org/protobuf v1.36.0
)
