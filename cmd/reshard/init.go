package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
)

func runInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("init", "--map F --index menu-v1 --alias menu [--replicas N|auto] [--opensearch URLs]", stdout)
	mapPath := fs.String("map", "", "map `file` to build the index with (required)")
	index := fs.String("index", "", "concrete index to create, e.g. menu-v1 (required)")
	alias := fs.String("alias", "menu", "alias readers and writers use (GEOSHARD_ALIAS)")
	replicasFlag := fs.String("replicas", "auto", "index.number_of_replicas, or auto: 1, and 0 on a one-node cluster (which can never place a replica)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	var cc bulk.ClientConfig
	cf := cli.RegisterClientFlags(fs, &cc, os.Getenv)
	if err := parse(fs, args, "map", "index"); err != nil {
		return err
	}
	var replicas *int
	if *replicasFlag != "auto" {
		n, err := strconv.Atoi(*replicasFlag)
		if err != nil || n < 0 {
			return badInput("--replicas %q: want a number of replicas (0 or more) or auto", *replicasFlag)
		}
		replicas = &n
	}
	if err := cf.Resolve(); err != nil {
		return cli.UsageError{Err: err}
	}
	m, err := readMap(*mapPath)
	if err != nil {
		return err
	}
	client, err := bulk.NewClient(cc)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := cf.CheckEngine(ctx, client, warnings(stderr)); err != nil {
		return err
	}
	err = migrate.Init(ctx, bulk.NewAdmin(client), migrate.InitConfig{Map: m, Index: *index, Alias: *alias, Replicas: replicas})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "index %s: %d shards, routing_num_shards %d, map %s; alias %s writes to it\n",
		*index, m.NumShards(), m.RoutingNumShards(), m.Hash(), *alias)
	return err
}
