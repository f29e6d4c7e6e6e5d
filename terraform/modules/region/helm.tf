# The AWS Load Balancer Controller turns the routers' LoadBalancer Services into NLBs.
module "lb_controller_irsa" {
  source  = "terraform-aws-modules/iam/aws//modules/iam-role-for-service-accounts-eks"
  version = "~> 5.60"

  role_name                              = "${var.name}-lb-controller"
  attach_load_balancer_controller_policy = true

  oidc_providers = {
    main = {
      provider_arn               = aws_iam_openid_connect_provider.eks.arn
      namespace_service_accounts = ["kube-system:aws-load-balancer-controller"]
    }
  }

  tags = local.tags
}

resource "helm_release" "lb_controller" {
  name       = "aws-load-balancer-controller"
  namespace  = "kube-system"
  repository = "https://aws.github.io/eks-charts"
  chart      = "aws-load-balancer-controller"
  version    = var.lb_controller_chart_version

  values = [yamlencode({
    clusterName = aws_eks_cluster.this.name
    region      = var.region
    vpcId       = aws_vpc.this.id
    serviceAccount = {
      name        = "aws-load-balancer-controller"
      annotations = { "eks.amazonaws.com/role-arn" = module.lb_controller_irsa.iam_role_arn }
    }
  })]

  depends_on = [aws_eks_node_group.system]
}

# TLS. The router's OpenAI port passes through its NLB as TCP, on 443 with TLS; a load balancer
# health check cannot present a client certificate (and a plain HTTP one is refused by a TLS port),
# so with TLS the NLB checks /readyz on the routers' plain metrics port, which answers the same.
# TLS gateways are reached through an internal NLB with their HTTP port alone, at the name their
# certificate covers (gateway_tls.advertise_url); cleartext gateways too when they advertise a
# stable name (gateway_advertise_url), which cluster identity needs.
locals {
  router_tls_mode     = var.router_tls == null ? "off" : (var.router_tls.require_client_certificates ? "mutual" : "on")
  router_metrics_port = 9100
  gateway_http_port   = 8080
  gateway_health_port = 9090

  # Where the load balancers' health checks come from: their subnets, in this VPC.
  lb_health_check_from        = [{ ipBlock = { cidr = var.vpc_cidr } }]
  router_lb_health_check_port = local.router_tls_mode == "off" ? "traffic-port" : tostring(local.router_metrics_port)
}

resource "helm_release" "router" {
  name             = "router"
  namespace        = var.namespace
  create_namespace = true
  chart            = "${local.chart_dir}/global-router"
  # The router is ready only once gateways publish; do not wait for it here.
  wait = false

  values = [yamlencode({
    region       = var.region
    replicaCount = length(var.etcd_endpoints) > 0 ? var.router_replicas : 1
    image        = { tag = var.image_tag }
    etcd = {
      endpoints = var.etcd_endpoints
      tls       = { secretName = length(var.etcd_endpoints) > 0 ? var.etcd_tls_secret_name : "" }
      auth = {
        username   = length(var.etcd_endpoints) > 0 && var.etcd_auth != null ? var.etcd_auth.username : ""
        secretName = length(var.etcd_endpoints) > 0 && var.etcd_auth != null ? var.etcd_auth.secret_name : ""
      }
    }
    admin = {
      tls = {
        secretName                = var.router_admin_tls != null ? var.router_admin_tls.secret_name : ""
        requireClientCertificates = var.router_admin_tls != null ? var.router_admin_tls.require_client_certificates : false
      }
    }
    gatewayTLS = {
      secretName        = var.router_gateway_tls != null ? var.router_gateway_tls.secret_name : ""
      clientCertificate = var.router_gateway_tls != null ? var.router_gateway_tls.client_certificate : true
    }
    tls = {
      secretName                = var.router_tls != null ? var.router_tls.secret_name : ""
      requireClientCertificates = var.router_tls != null ? var.router_tls.require_client_certificates : false
    }
    ports = { metrics = local.router_metrics_port }

    # Cluster identity (identity.tf): the hook Job registers cluster_registrations, and then the
    # routers accept only signed summaries of registered clusters. With no registration the
    # routers run in compatibility mode unless require_cluster_identity says otherwise.
    clusterIdentity = {
      required               = local.identity_required
      allowCleartextGateways = local.cleartext_gateways
      registrations          = local.router_registrations
      registrar = {
        image                = { tag = var.image_tag }
        clientCertSecretName = try(var.router_admin_tls.client_secret_name, "")
      }
    }
    # The NLB health-checks the pods from its addresses in this VPC (IP targets), on the
    # metrics port when --listen serves TLS, which metricsFrom narrows.
    networkPolicy = { gossipFrom = local.router_gossip_from, healthCheckFrom = local.lb_health_check_from }
    # Regional gossip pools (aggregator.tf): the region's pool runs LAN timings, and the routers
    # are its aggregators.
    aggregator = local.router_aggregator
    gossip = {
      key     = var.gossip_key
      join    = var.gossip_join
      profile = local.aggregator ? "lan" : "wan"
      service = {
        type = "LoadBalancer"
        annotations = {
          "service.beta.kubernetes.io/aws-load-balancer-type"            = "external"
          "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type" = "ip"
          "service.beta.kubernetes.io/aws-load-balancer-scheme"          = "internal"
          "service.beta.kubernetes.io/aws-load-balancer-name"            = local.gossip_lb_name
        }
      }
    }
    service = {
      port = local.router_tls_mode == "off" ? 80 : 443
      annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-scheme"               = var.load_balancer_scheme
        "service.beta.kubernetes.io/aws-load-balancer-name"                 = local.router_lb_name
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol" = "http"
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"     = "/readyz"
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"     = local.router_lb_health_check_port
      }
    }
    nodeSelector = { "switchyard.dev/role" = "system" }
  })]

  # The region key (aggregator.tf), kept out of the plan's output; the chart stores it in the
  # Secret the aggregators mount at --region-signing-key-file.
  set_sensitive = [for k in tls_private_key.region_signing : {
    name  = "aggregator.regionSigningKey.key"
    value = k.private_key_pem_pkcs8
    type  = "string"
  }]

  lifecycle {
    precondition {
      condition     = var.aggregator == null || length(var.gossip_join) == 0
      error_message = "With aggregator (regional gossip pools) the region's gossip stays inside the region: leave gossip_join empty, the other regions are reached through aggregator.wan_join."
    }
    precondition {
      condition     = !try(var.gateway_tls.require_client_certificates, false) || try(var.router_gateway_tls.client_certificate, false)
      error_message = "gateway_tls.require_client_certificates needs router_gateway_tls with client_certificate = true: this region's routers reach its gateways at gateway_tls.advertise_url too, and must present a certificate signed by the gateway Secret's ca.crt (so must every other region's routers)."
    }
    precondition {
      condition     = length(var.cluster_registrations) == 0 || !try(var.router_admin_tls.require_client_certificates, false) || try(var.router_admin_tls.client_secret_name, "") != ""
      error_message = "cluster_registrations with router_admin_tls.require_client_certificates need router_admin_tls.client_secret_name: the Secret whose tls.crt and tls.key the registration Job presents to the admin port."
    }
    precondition {
      condition     = var.gateway_tls == null || var.gateway_advertise_url == ""
      error_message = "Give gateway_advertise_url only without gateway_tls, whose advertise_url the gateways then advertise."
    }
  }

  depends_on = [helm_release.lb_controller]
}

resource "helm_release" "gateway" {
  name             = "gateway"
  namespace        = var.namespace
  create_namespace = true
  chart            = "${local.chart_dir}/cluster-gateway"
  wait             = false

  values = [yamlencode({
    cluster = local.cluster_name
    region  = var.region
    image   = { tag = var.image_tag }
    pool    = { name = var.pool_name, namespace = var.pool_namespace }
    profile = var.gateway_profile
    gossip = {
      key  = var.gossip_key
      join = ["router-global-router-gossip.${var.namespace}.svc:7946"]
    }
    networkPolicy = { gossipFrom = local.peer_gossip_from, healthCheckFrom = local.lb_health_check_from }
    tls = {
      secretName                = var.gateway_tls != null ? var.gateway_tls.secret_name : ""
      requireClientCertificates = var.gateway_tls != null ? var.gateway_tls.require_client_certificates : false
    }
    advertiseURL = local.gateway_url
    ports        = { http = local.gateway_http_port, metrics = local.gateway_health_port }
    proxyService = {
      enabled = local.gateway_url != ""
      annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-type"                 = "external"
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"      = "ip"
        "service.beta.kubernetes.io/aws-load-balancer-scheme"               = "internal"
        "service.beta.kubernetes.io/aws-load-balancer-name"                 = local.gateway_lb_name
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol" = "http"
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"     = "/readyz"
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"     = tostring(local.gateway_health_port)
        "service.beta.kubernetes.io/aws-load-balancer-attributes"           = "load_balancing.cross_zone.enabled=true"
      }
      loadBalancerSourceRanges = concat([var.vpc_cidr], var.peer_cidrs)
    }
    nodeSelector = { "switchyard.dev/role" = "system" }
  })]

  # The summary signing key (identity.tf), kept out of the plan's output; the chart stores it in
  # the Secret the gateways mount at --summary-signing-key-file.
  set_sensitive = [{
    name  = "gossip.summarySigning.key"
    value = tls_private_key.signing.private_key_pem_pkcs8
    type  = "string"
  }]

  depends_on = [helm_release.router]
}

# The controller creates the NLBs shortly after the Services; give it time before reading them.
resource "time_sleep" "load_balancers" {
  create_duration = "120s"
  depends_on      = [helm_release.router]
}

data "aws_lb" "router" {
  name       = local.router_lb_name
  depends_on = [time_sleep.load_balancers]
}

data "aws_lb" "gossip" {
  name       = local.gossip_lb_name
  depends_on = [time_sleep.load_balancers]
}

# The gateways' internal NLB comes with gateway_tls or gateway_advertise_url, perhaps long after
# the others: its own wait is created with it, so the load balancer is read only once it exists.
resource "time_sleep" "gateway_load_balancer" {
  count           = local.gateway_url != "" ? 1 : 0
  create_duration = "120s"
  depends_on      = [helm_release.gateway]
}

data "aws_lb" "gateway" {
  count      = local.gateway_url != "" ? 1 : 0
  name       = local.gateway_lb_name
  depends_on = [time_sleep.gateway_load_balancer]
}
