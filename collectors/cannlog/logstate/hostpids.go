package logstate

// SetHostPIDs records the host pid of the processes discovery found (by the
// key their plogs are read under), for the joins (ProcessDevice.HostPID).
// Host pids learnt from files (NoteHostPID) are kept while discovery still
// lists their process.
func (s *State) SetHostPIDs(m map[ProcessKey]int) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	s.hostPIDs = m
	listed := make(map[int]bool, len(m))
	for _, h := range m {
		listed[h] = true
	}
	for k, h := range s.fileHost {
		if !listed[h] {
			delete(s.fileHost, k)
		}
	}
}

// NoteHostPID records the host pid of a process whose file a configured
// root reaches and /proc does too: its lines are read under the configured
// directory, and the join still need not guess.
func (s *State) NoteHostPID(k ProcessKey, host int) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if s.hostPIDs[k] == host || s.fileHost[k] == host {
		return
	}
	if s.fileHost == nil {
		s.fileHost = map[ProcessKey]int{}
	}
	s.fileHost[k] = host
}

func (s *State) hostPID(k ProcessKey) int {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if h := s.hostPIDs[k]; h != 0 {
		return h
	}
	return s.fileHost[k]
}
