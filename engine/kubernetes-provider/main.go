// pulumi-resource-kubernetes: upstream's cmd/pulumi-resource-kubernetes/main.go embeds two
// generated, git-ignored files and so cannot be built from the module. This main serves the
// same provider with the schema and Terraform mapping that ship in the module's
// cmd/pulumi-resource-kubernetes/, which scripts/build-engine copies here (schema.json with
// its "version" set, as upstream's generate.go does) before building.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
)

// Set by scripts/build-engine (-ldflags -X main.version=...).
var version = "4.25.0"

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version, pulumiSchema, terraformMapping)
}
