package osfake

import "net/http"

// Search endpoints: _search, _count, _search_shards and point in time.

type pit struct{}

func (s *Server) handleSearch(w http.ResponseWriter, q *request)       { notImplemented(w, q) }
func (s *Server) handleCount(w http.ResponseWriter, q *request)        { notImplemented(w, q) }
func (s *Server) handleSearchShards(w http.ResponseWriter, q *request) { notImplemented(w, q) }
func (s *Server) handleCreatePIT(w http.ResponseWriter, q *request)    { notImplemented(w, q) }
func (s *Server) handleDeletePIT(w http.ResponseWriter, q *request)    { notImplemented(w, q) }
func (s *Server) handleAllPITs(w http.ResponseWriter, q *request)      { notImplemented(w, q) }
