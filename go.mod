module github.com/nuvirahub/latencylab

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	github.com/quic-go/quic-go v0.65.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/net v0.56.0
	golang.org/x/sys v0.47.0
)

require golang.org/x/crypto v0.54.0 // indirect
