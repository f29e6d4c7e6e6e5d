package kvevents

import (
	"encoding/binary"
	"math"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// The tags of vLLM's tagged-union events (msgspec, array_like, tag first).
const (
	TagStored  = "BlockStored"
	TagRemoved = "BlockRemoved"
	TagCleared = "AllBlocksCleared"
)

// medium is the cache tier vLLM names in its events; modelsim simulates GPU memory only.
const medium = "GPU"

// AppendBatch appends the msgpack encoding of a KVEventBatch [ts, events, data_parallel_rank]
// to dst, as vLLM's msgspec encoder writes it: BlockStored [tag, block_hashes,
// parent_block_hash, token_ids, block_size, lora_id, medium, lora_name], BlockRemoved [tag,
// block_hashes, medium], AllBlocksCleared [tag]. Each event carries one block.
func AppendBatch(dst []byte, ts float64, events []engine.KVEvent, blockSize int, rank int64) []byte {
	dst = appendArray(dst, 3)
	dst = binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(ts))
	dst = appendArray(dst, len(events))
	for i := range events {
		dst = appendEvent(dst, &events[i], blockSize)
	}
	return appendInt(dst, rank)
}

func appendEvent(dst []byte, ev *engine.KVEvent, blockSize int) []byte {
	switch ev.Kind {
	case engine.KVStored:
		dst = appendString(appendArray(dst, 8), TagStored)
		dst = appendUint(appendArray(dst, 1), ev.Hash)
		if ev.HasParent {
			dst = appendUint(dst, ev.Parent)
		} else {
			dst = append(dst, 0xc0)
		}
		dst = appendArray(dst, len(ev.Tokens))
		for _, t := range ev.Tokens {
			dst = appendInt(dst, t)
		}
		dst = appendInt(dst, int64(blockSize))
		dst = append(dst, 0xc0) // lora_id: modelsim has no adapter ids
		dst = appendString(dst, medium)
		if ev.Adapter == "" {
			return append(dst, 0xc0)
		}
		return appendString(dst, ev.Adapter)
	case engine.KVRemoved:
		dst = appendString(appendArray(dst, 3), TagRemoved)
		dst = appendUint(appendArray(dst, 1), ev.Hash)
		return appendString(dst, medium)
	}
	return appendString(appendArray(dst, 1), TagCleared)
}

func appendArray(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<8:
		b = append(b, 0xd9, byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendUint appends v in its shortest msgpack form.
func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(b, byte(v))
	case v < 1<<8:
		return append(b, 0xcc, byte(v))
	case v < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v < 1<<32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

// appendInt appends v in its shortest msgpack form (non-negative values as unsigned).
func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(b, uint64(v))
	case v >= -32:
		return append(b, byte(v))
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}
