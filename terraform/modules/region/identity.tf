# Cluster identity. The gateways of this region's cluster sign their capacity summaries with an
# Ed25519 key generated here (kept in the Terraform state and, through the gateway chart, in the
# Secret <release>-cluster-gateway-signing that the gateways mount); output cluster_registration
# carries its public key and the gateways' advertised URL. The router chart's Helm hook Job
# registers every cluster of cluster_registrations (switchyardctl register-cluster --replace, so
# re-applying changes nothing that did not change), and the routers then accept only summaries
# that a registered key signed for a registered URL.
resource "tls_private_key" "signing" {
  algorithm = "ED25519"
}

locals {
  # The URL the gateways advertise and routers forward to: the TLS name, the cleartext name in
  # front of the gateways' load balancer, or (neither) the pods' own addresses, which change
  # with every pod and so cannot be registered.
  gateway_url = trimsuffix(var.gateway_tls != null ? var.gateway_tls.advertise_url : var.gateway_advertise_url, "/")

  identity_required  = var.require_cluster_identity != null ? var.require_cluster_identity : length(var.cluster_registrations) > 0
  cleartext_gateways = anytrue([for r in var.cluster_registrations : anytrue([for u in r.gateway_urls : startswith(u, "http://")])])
  router_registrations = [for r in var.cluster_registrations : {
    cluster     = r.cluster
    region      = r.region
    gatewayURLs = r.gateway_urls
    models      = r.models
    publicKeys  = r.public_keys
  }]

  # Gossip from the other regions (pod and node addresses of their VPCs). The charts admit this
  # cluster's own Switchyard pods by label; the routers' gossip port is also reached through its
  # internal load balancer, which does not keep TCP clients' addresses (IP targets), so the
  # routers admit this VPC's addresses too.
  # With regional gossip pools (aggregator) no other region gossips with this one's pool.
  peer_gossip_from   = local.aggregator ? [] : [for c in var.peer_cidrs : { ipBlock = { cidr = c } }]
  router_gossip_from = concat([{ ipBlock = { cidr = var.vpc_cidr } }], local.peer_gossip_from)
}
