# Regional gossip pools (var.aggregator). The routers are the region's aggregators: besides the
# region's pool they join the pool of aggregators on local.wan_port, reached from the other
# regions through an internal load balancer (a seed only: members then talk to each other at
# their pod addresses over the peering), and sign the region digest with the region key
# generated here. The key's private half reaches the router chart as a sensitive value (the
# Secret <release>-global-router-region-signing, mounted at --region-signing-key-file); its
# public half is output region_registration, registered with `switchyardctl register-region`.
resource "tls_private_key" "region_signing" {
  count     = var.aggregator != null ? 1 : 0
  algorithm = "ED25519"
}

locals {
  aggregator  = var.aggregator != null
  wan_port    = 7947
  wan_lb_name = "${var.name}-wan"

  # The WAN port admits the other regions' aggregators (their VPCs) and this VPC, from which the
  # internal load balancer (IP targets) connects without keeping the client's address.
  router_aggregator = {
    enabled = local.aggregator
    port    = local.wan_port
    wanJoin = local.aggregator ? var.aggregator.wan_join : []
    wanFrom = local.aggregator ? concat([var.vpc_cidr], var.peer_cidrs) : []
    service = {
      type = "LoadBalancer"
      annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-type"            = "external"
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type" = "ip"
        "service.beta.kubernetes.io/aws-load-balancer-scheme"          = "internal"
        "service.beta.kubernetes.io/aws-load-balancer-name"            = local.wan_lb_name
      }
    }
  }
}

data "aws_lb" "wan" {
  count      = local.aggregator ? 1 : 0
  name       = local.wan_lb_name
  depends_on = [time_sleep.load_balancers]
}
