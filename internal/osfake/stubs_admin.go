package osfake

import "net/http"

// Cluster, cat and alias endpoints.

func (s *Server) handleClusterHealth(w http.ResponseWriter, q *request) { notImplemented(w, q) }
func (s *Server) handleCatIndices(w http.ResponseWriter, q *request)    { notImplemented(w, q) }
func (s *Server) handleCatShards(w http.ResponseWriter, q *request)     { notImplemented(w, q) }
func (s *Server) handleCatAliases(w http.ResponseWriter, q *request)    { notImplemented(w, q) }
func (s *Server) handleCatCount(w http.ResponseWriter, q *request)      { notImplemented(w, q) }
func (s *Server) handleAliases(w http.ResponseWriter, q *request)       { notImplemented(w, q) }
func (s *Server) handleGetAlias(w http.ResponseWriter, q *request)      { notImplemented(w, q) }
func (s *Server) handlePutAlias(w http.ResponseWriter, q *request)      { notImplemented(w, q) }
func (s *Server) handleDeleteAlias(w http.ResponseWriter, q *request)   { notImplemented(w, q) }
