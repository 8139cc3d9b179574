package osfake

import "net/http"

// Document endpoints: _bulk and the single-document APIs.

func (s *Server) handleBulk(w http.ResponseWriter, q *request)      { notImplemented(w, q) }
func (s *Server) handleIndexDoc(w http.ResponseWriter, q *request)  { notImplemented(w, q) }
func (s *Server) handleGetDoc(w http.ResponseWriter, q *request)    { notImplemented(w, q) }
func (s *Server) handleGetSource(w http.ResponseWriter, q *request) { notImplemented(w, q) }
func (s *Server) handleDeleteDoc(w http.ResponseWriter, q *request) { notImplemented(w, q) }
func (s *Server) handleUpdateDoc(w http.ResponseWriter, q *request) { notImplemented(w, q) }
