package scheduling

// The built-in plugins register themselves with the framework registry when imported.
import (
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/giecompat"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/kvcachescorer"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/leastconn"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/leastrequest"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/loraaffinity"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/maxscore"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/p2c"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/pdhandler"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/preciseprefix"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/predictedttft"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/prefixcache"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/queuescorer"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/randompicker"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/rolefilter"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/roundrobin"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/runningrequests"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/saturation"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/sessionaffinity"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/slofilter"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/weightedrandom"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/weightedroundrobin"
)
