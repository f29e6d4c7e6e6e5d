package prefixcache

// ownerSet is the set of pod ids holding one block hash. Most blocks live on one or two pods, so
// the first two ids are stored inline and only larger sets allocate.
type ownerSet struct {
	n    int32
	ids  [2]int32
	more []int32
}

func (o *ownerSet) add(id int32) {
	if o.n < int32(len(o.ids)) {
		o.ids[o.n] = id
	} else {
		o.more = append(o.more, id)
	}
	o.n++
}

// remove deletes id (if present) by moving the last id into its place.
func (o *ownerSet) remove(id int32) {
	for i := int32(0); i < o.n; i++ {
		if o.at(i) == id {
			o.set(i, o.at(o.n-1))
			o.n--
			if o.n >= int32(len(o.ids)) {
				o.more = o.more[:o.n-int32(len(o.ids))]
			}
			return
		}
	}
}

func (o *ownerSet) at(i int32) int32 {
	if i < int32(len(o.ids)) {
		return o.ids[i]
	}
	return o.more[i-int32(len(o.ids))]
}

func (o *ownerSet) set(i, v int32) {
	if i < int32(len(o.ids)) {
		o.ids[i] = v
		return
	}
	o.more[i-int32(len(o.ids))] = v
}
