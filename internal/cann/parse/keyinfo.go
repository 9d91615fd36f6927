package parse

import (
	"bytes"
	"strconv"
)

var (
	tagCommKeyInfo      = []byte("[Communicator Key Info]")
	tagLocalRankKeyInfo = []byte("[LocalRank Key Info]")
	markCommDestroy     = []byte("Entry-HcclCommDestroy")
)

// IsKeyInfoLine is the hot-path pre-check for the key-info and communicator
// lifecycle lines: HCCL starts their messages (after the tid) with the tag
// or the `Entry-` name.
func IsKeyInfoLine(msg []byte) bool {
	return bytes.HasPrefix(msg, tagCommKeyInfo) || bytes.HasPrefix(msg, tagLocalRankKeyInfo) || bytes.HasPrefix(msg, markCommDestroy)
}

// CommunicatorInfo comes from
// `[Communicator Key Info]identifier[X] rankSize[N] serverNum[M] …`.
type CommunicatorInfo struct {
	Identifier string
	RankSize   int
	ServerNum  int
}

// ParseCommunicatorKeyInfo reads a `[Communicator Key Info]` message.
func ParseCommunicatorKeyInfo(msg []byte) (CommunicatorInfo, bool) {
	i := bytes.Index(msg, tagCommKeyInfo)
	if i < 0 {
		return CommunicatorInfo{}, false
	}
	msg = msg[i+len(tagCommKeyInfo):]
	id, ok := BracketField(msg, "identifier")
	if !ok || len(id) == 0 || bytes.ContainsAny(id, "[ ") {
		return CommunicatorInfo{}, false
	}
	ranks, ok1 := BracketInt(msg, "rankSize")
	servers, ok2 := BracketInt(msg, "serverNum")
	if !ok1 || !ok2 || ranks <= 0 {
		return CommunicatorInfo{}, false
	}
	return CommunicatorInfo{Identifier: string(id), RankSize: ranks, ServerNum: servers}, true
}

// LocalRankInfo comes from `[LocalRank Key Info]userRank[6] … devicePhyId[6] …`,
// printed right after the communicator's own key-info line.
type LocalRankInfo struct {
	UserRank    int
	DevicePhyID int
	// SuperPodID is superPodId[…] as printed ("" when absent);
	// SuperPodMode is useSuperPodMode[…] and StandardCard isStandardCard[…]
	// (a PCIe standard card), -1 when absent.
	SuperPodID   string
	SuperPodMode int
	StandardCard int
}

// ParseLocalRankKeyInfo reads a `[LocalRank Key Info]` message.
func ParseLocalRankKeyInfo(msg []byte) (LocalRankInfo, bool) {
	i := bytes.Index(msg, tagLocalRankKeyInfo)
	if i < 0 {
		return LocalRankInfo{}, false
	}
	msg = msg[i+len(tagLocalRankKeyInfo):]
	rank, ok1 := BracketInt(msg, "userRank")
	phy, ok2 := BracketInt(msg, "devicePhyId")
	if !ok1 {
		return LocalRankInfo{}, false
	}
	if !ok2 {
		phy = -1
	}
	lr := LocalRankInfo{UserRank: rank, DevicePhyID: phy, SuperPodMode: -1, StandardCard: -1}
	if v, ok := BracketField(msg, "superPodId"); ok && len(v) <= 64 {
		lr.SuperPodID = string(v)
	}
	if v, ok := BracketInt(msg, "useSuperPodMode"); ok {
		lr.SuperPodMode = v
	}
	if v, ok := BracketInt(msg, "isStandardCard"); ok {
		lr.StandardCard = v
	}
	return lr, true
}

// CommDestroy reports whether msg is `Entry-HcclCommDestroy…` and returns
// the communicator identifier when the line names one (CANN at the time of
// writing prints only "op_base comm destroy begin").
func CommDestroy(msg []byte) (identifier string, ok bool) {
	i := bytes.Index(msg, markCommDestroy)
	if i < 0 {
		return "", false
	}
	if id, found := BracketField(msg[i:], "identifier"); found {
		return string(id), true
	}
	// HCOMM-HEAD: `Entry-HcclCommDestroy op_base comm destroy complete,
	// take time [%lld]us, group[%s], deviceLogicId[%d].` (op_base.cc:3744).
	if id, found := BracketField(msg[i:], "group"); found && len(id) > 0 {
		return string(id), true
	}
	return "", true
}

// BracketField returns the value of `name[value]` in msg. The name must
// start a word so that "rank[" does not match inside "userRank[".
func BracketField(msg []byte, name string) ([]byte, bool) {
	for off := 0; off < len(msg); {
		i := bytes.Index(msg[off:], []byte(name))
		if i < 0 {
			return nil, false
		}
		i += off
		j := i + len(name)
		if (i == 0 || !isAlnum(msg[i-1])) && j < len(msg) && msg[j] == '[' {
			end := bytes.IndexByte(msg[j+1:], ']')
			if end < 0 {
				return nil, false
			}
			return msg[j+1 : j+1+end], true
		}
		off = j
	}
	return nil, false
}

// BracketInt reads the field name[n] of msg (BracketField) as a
// non-negative int of at most 9 digits; ok is false when it is absent or
// not one.
func BracketInt(msg []byte, name string) (int, bool) {
	v, ok := BracketField(msg, name)
	if !ok || len(v) == 0 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
