package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/geoshard/geoshard/bulk"
)

// RegisterClientFlags defines the flags of c on fs. Each names its
// GEOSHARD_* environment variable in its usage, which the commands apply
// with the flag's own parsing (internal/envflag); getenv (usually
// os.Getenv) is read for the password only:
//
//	--opensearch           GEOSHARD_OPENSEARCH            comma-separated node URLs
//	--opensearch-username  GEOSHARD_OPENSEARCH_USERNAME
//	(password)             GEOSHARD_OPENSEARCH_PASSWORD   or --opensearch-password-file
//	--opensearch-ca        GEOSHARD_OPENSEARCH_CA         PEM file of CAs to trust
//	--opensearch-insecure  GEOSHARD_OPENSEARCH_INSECURE   skip TLS verification
//	--opensearch-gzip      GEOSHARD_OPENSEARCH_GZIP       ask for gzipped responses
//	--allow-untested-opensearch  GEOSHARD_ALLOW_UNTESTED_OPENSEARCH
//	                       run on an OpenSearch newer than tested (engine.go)
//
// The password has no flag of its own, so it never shows in a process
// list. Call Resolve after fs.Parse.
func RegisterClientFlags(fs *flag.FlagSet, c *bulk.ClientConfig, getenv func(string) string) *ClientFlags {
	cf := &ClientFlags{c: c, getenv: getenv}
	fs.StringVar(&cf.addrs, "opensearch", "http://127.0.0.1:9200", "OpenSearch node `URLs`, comma-separated (GEOSHARD_OPENSEARCH)")
	fs.StringVar(&c.Username, "opensearch-username", "", "basic-auth user (GEOSHARD_OPENSEARCH_USERNAME); the password comes from GEOSHARD_OPENSEARCH_PASSWORD or --opensearch-password-file")
	fs.StringVar(&cf.passwordFile, "opensearch-password-file", "", "read the basic-auth password from this `file`")
	fs.StringVar(&c.CACertFile, "opensearch-ca", "", "PEM `file` of CA certificates to trust (GEOSHARD_OPENSEARCH_CA)")
	fs.BoolVar(&c.InsecureSkipVerify, "opensearch-insecure", false, "skip TLS certificate verification; for test clusters only (GEOSHARD_OPENSEARCH_INSECURE)")
	fs.BoolVar(&c.Gzip, "opensearch-gzip", false, "ask OpenSearch to gzip its responses: less bandwidth over a slow link, more CPU on the nodes and here (GEOSHARD_OPENSEARCH_GZIP)")
	fs.BoolVar(&cf.allowUntested, "allow-untested-opensearch", false, "run on an OpenSearch newer than geoshard is tested with ("+bulk.SupportedEngines()+"), with a warning, instead of refusing it; never on an older OpenSearch or on Elasticsearch (GEOSHARD_ALLOW_UNTESTED_OPENSEARCH)")
	return cf
}

// ClientFlags holds flag values that need work after parsing.
type ClientFlags struct {
	c            *bulk.ClientConfig
	getenv       func(string) string
	addrs        string
	passwordFile string
	// allowUntested turns the refusal of an OpenSearch newer than tested
	// into a warning (CheckEngine).
	allowUntested bool
}

// Resolve fills the ClientConfig from the parsed flags and validates it.
func (cf *ClientFlags) Resolve() error {
	cf.c.Addresses = nil
	for _, a := range strings.Split(cf.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cf.c.Addresses = append(cf.c.Addresses, a)
		}
	}
	cf.c.Password = bulk.NewSecret(cf.getenv("GEOSHARD_OPENSEARCH_PASSWORD"))
	if cf.passwordFile != "" {
		b, err := os.ReadFile(cf.passwordFile)
		if err != nil {
			return fmt.Errorf("--opensearch-password-file: %w", err)
		}
		cf.c.Password = bulk.NewSecret(strings.TrimRight(string(b), "\r\n"))
	}
	return cf.c.Validate()
}
