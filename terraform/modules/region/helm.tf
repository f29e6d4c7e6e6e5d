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
    gossip = {
      key  = var.gossip_key
      join = var.gossip_join
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
      annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-scheme" = var.load_balancer_scheme
        "service.beta.kubernetes.io/aws-load-balancer-name"   = local.router_lb_name
      }
    }
    nodeSelector = { "switchyard.dev/role" = "system" }
  })]

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
    nodeSelector = { "switchyard.dev/role" = "system" }
  })]

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
