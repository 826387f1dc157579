module shale.dev/bindings/go

go 1.26.0

require github.com/ethereum/go-ethereum v1.17.10
