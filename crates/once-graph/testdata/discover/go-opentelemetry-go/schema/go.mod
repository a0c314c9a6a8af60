module go.opentelemetry.io/otel/schema

go 1.25.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/stretchr/testify v1.12.1
	gopkg.in/yaml.v3 v3.0.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
